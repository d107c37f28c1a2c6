#!/bin/bash
# tests/bench/fanout.sh: what fan-out costs per target (issue 30). One outbox
# database (bench2_fanout), pre-filled with EVENTS events (outbox_enqueue,
# 1,000 aggregates), three memory outputs (acknowledge at once), relayed by
# `run` until /metrics (scraped every 0.1 s) shows every event published by
# every target (B) or by the source (A), then stopped. Not `run --drain`: with
# a backlog the target sources find their tables empty at the start, call
# themselves drained and stop before the source has copied anything, and the
# process exits 0 with every copy unpublished. Two phases alternated A B A B ... for ROUNDS rounds, each
# on a freshly made database with the same schema (init-db of B's config, so
# the target tables exist in both):
#   A  the route to one output:    output = "m1";
#   B  the route to three outputs: output = ["m1", "m2", "m3"]; the source
#      copies each event into outbox_to_m1..m3, and a poll source per target
#      (outbox.m1 ...) relays its table.
# Per phase: wall time from the relay's start until everything is published; WAL bytes per
# event (pg_current_wal_lsn before and after); commits per event
# (pg_stat_database.xact_commit of that database: includes this script's
# few queries, the same in every phase); rows written per event (inserted +
# updated + deleted, pg_stat_user_tables over the database); relay CPU
# (user+sys, /usr/bin/time) per 10k events; warn/error lines. Then per mode
# the means, B/A, and per target ((B - A) / 3). Delivery is checked: every
# event published by the source (and by each target in B), from the tables
# and from each source's "relay stopped" line.
#
#   tests/bench/fanout.sh [--events N] [--rounds N] [--sources poll,wal] [--keep]
#
# --sources wal runs the pair with the source in WAL mode (its slot
# bench2_fanout); the targets are poll sources either way.
# Needs the shared services and a Release build (OBX_BUILD, default
# build-bench; OBX_BIN, OBX_DRIVERS override), /usr/bin/time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/bench_lib.sh"

EVENTS=50000 ROUNDS=2 SOURCES=poll KEEP='' LIMIT=120
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --sources) SOURCES=$2; shift ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release) or set OBX_BIN"
[ -x /usr/bin/time ] || fail "/usr/bin/time missing (package time)"
DB=bench2_fanout
PORT=$((20000 + $$ % 20000))
WORK=$(mktemp -d /tmp/obx-bfan.XXXXXX)
RELAY_PID=
cleanup() {
    set +e
    [ -n "$RELAY_PID" ] && { pkill -TERM -P "$RELAY_PID"; wait "$RELAY_PID"; }
    drop_db
    if [ -n "$KEEP" ]; then note "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
q() { psql -qAt -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
drop_db() {
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    psql -qAt -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                              WHERE slot_name = '$DB'" >/dev/null 2>&1
    return 0
}

# cfg MODE ROUTE_OUTPUT FILE
cfg() {
    local src=""
    [ "$1" = wal ] && src="source = \"wal\"; wal = { slot = \"$DB\"; };"
    cat >"$3" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"; };
relay = { drivers_dir = "$OBX_DRIVERS"; workers = 1; poll_interval_ms = 200; $src };
log = { level = "info"; };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "m1"; driver = "memory"; }, { name = "m2"; driver = "memory"; },
            { name = "m3"; driver = "memory"; } );
routes = ( { output = $2; destination = "bench"; } );
CFG
    chmod 600 "$3"
}

# fresh MODE: the database made anew, init-db of the fan-out config (the
# target tables exist in A too), EVENTS events, VACUUM ANALYZE, CHECKPOINT
fresh() {
    drop_db
    psql -qAt -d postgres -c "CREATE DATABASE $DB" >/dev/null
    cfg "$1" '["m1", "m2", "m3"]' "$WORK/B.cfg"
    cfg "$1" '"m1"' "$WORK/A.cfg"
    "$OBX_BIN" init-db -c "$WORK/B.cfg" >>"$WORK/init.log" 2>&1 || { cat "$WORK/init.log" >&2; fail "init-db"; }
    q "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 1000), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $EVENTS) g" >/dev/null
    q "VACUUM ANALYZE" >/dev/null
    q "CHECKPOINT" >/dev/null
    sleep 1 # the statistics of the sessions above reach pg_stat_*
}
rows_written() {
    q "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables"
}
commits() { q "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }

# phase MODE A|B ROUND: one drain; prints one tab-separated line
phase() {
    local mode=$1 kind=$2 round=$3 lsn0 c0 r0 t0 t1 rc=0 u s m wal commits rows problems t published
    fresh "$mode"
    lsn0=$(q "SELECT pg_current_wal_lsn()") c0=$(commits) r0=$(rows_written)
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$OBX_BIN" run -c "$WORK/$kind.cfg" >"$WORK/relay.log" 2>&1 &
    RELAY_PID=$!
    # done when every target (B) or the source (A) has published EVENTS
    local want=outbox
    [ "$kind" = B ] && want="outbox.m1 outbox.m2 outbox.m3"
    while :; do
        kill -0 "$RELAY_PID" 2>/dev/null || { tail -20 "$WORK/relay.log" >&2; fail "$mode $kind: the relay exited"; }
        curl -sf "http://127.0.0.1:$PORT/metrics" 2>/dev/null |
            awk '/^outbox_relay_published_total[{ ]/ { n = "outbox"  # a single source names none
                if (match($0, /source="[^"]*"/)) n = substr($0, RSTART + 8, RLENGTH - 9); print n, $NF }' >"$WORK/pub.now" || true
        t1=$(date +%s.%N)
        awk -v want="$want" -v e="$EVENTS" '{ p[$1] = $2 } END { n = split(want, w, " ")
            for (i = 1; i <= n; i++) if (p[w[i]] + 0 < e) exit 1 }' "$WORK/pub.now" && break
        awk -v a="$t0" -v b="$t1" -v l="$LIMIT" 'BEGIN { exit !(b - a > l) }' &&
            { cat "$WORK/pub.now" >&2; fail "$mode $kind: not everything published after $LIMIT s"; }
        sleep 0.1
    done
    pkill -TERM -P "$RELAY_PID" || true # the relay under /usr/bin/time
    wait "$RELAY_PID" || rc=$?
    RELAY_PID=
    [ $rc = 0 ] || { tail -20 "$WORK/relay.log" >&2; fail "$mode $kind: the relay exited $rc"; }
    sleep 1 # its sessions' statistics reach pg_stat_*
    wal=$(q "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')::bigint")
    commits=$(($(commits) - c0))
    rows=$(($(rows_written) - r0))
    read -r u s m < <(tail -1 "$WORK/time")
    # delivery: the source's rows (poll), each target's table (B), and every
    # source's own count in its "relay stopped" line
    [ "$mode" = wal ] || [ "$(q "SELECT count(*) FROM outbox WHERE published_at IS NULL")" = 0 ] ||
        fail "$mode $kind: outbox rows left unpublished"
    if [ "$kind" = B ]; then
        for t in m1 m2 m3; do
            [ "$(q "SELECT count(*) FILTER (WHERE published_at IS NOT NULL AND dead_at IS NULL) FROM outbox_to_$t")" = "$EVENTS" ] ||
                fail "$mode B: outbox_to_$t: $(q "SELECT count(*), count(published_at), count(dead_at) FROM outbox_to_$t") (rows, published, dead)"
        done
    fi
    # (a single-source log's lines name no source: it is "outbox")
    published=$(awk '/relay stopped:/ { n = "outbox"; if (match($0, /\[[^]]*\] relay stopped/)) n = substr($0, RSTART + 1, index(substr($0, RSTART), "]") - 2)
                     p = $0; sub(/.* published /, "", p); sub(/,.*/, "", p); print n "=" p }' "$WORK/relay.log" | sort | tr '\n' ' ')
    for t in $published; do
        [ "${t#*=}" = "$EVENTS" ] || fail "$mode $kind: a source did not publish every event: $published"
    done
    [ -n "$published" ] || fail "$mode $kind: no \"relay stopped\" line: $(tail -5 "$WORK/relay.log")"
    problems=$(grep -cE '^[^ ]+ (warn|error|fatal)' "$WORK/relay.log" || true)
    grep -hE '^[^ ]+ (warn|error|fatal)' "$WORK/relay.log" | sed "s/^/$mode $kind $round: /" >>"$WORK/problems.log" || true
    mkdir -p "$WORK/$mode$kind$round" && cp "$WORK/relay.log" "$WORK/$mode$kind$round/"
    awk -v md="$mode" -v k="$kind" -v r="$round" -v e="$EVENTS" -v t0="$t0" -v t1="$t1" -v w="$wal" -v c="$commits" \
        -v rw="$rows" -v u="$u" -v s="$s" -v m="$m" -v p="$problems" -v pub="$published" 'BEGIN {
        printf "%s\t%s\t%d\t%.2f\t%.0f\t%.4f\t%.2f\t%.3f\t%.1f\t%d\t%s\n", md, k, r, t1 - t0, w / e, c / e, rw / e,
            (u + s) * 10000 / e, m / 1024, p, pub }'
}

note "fan-out: $EVENTS events (1,000 aggregates) on one database, memory outputs, 1 worker, poll_interval_ms 200;"
note "         $ROUNDS rounds of A (output m1) then B (m1, m2, m3) per mode ($SOURCES); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'mode\tphase\tround\twall_s\twal_bytes_per_event\tcommits_per_event\trows_written_per_event\trelay_cpu_s_per_10k\tpeak_rss_mb\twarn_error_lines\tpublished_per_source\n' |
    tee "$WORK/raw.tsv"
for mode in ${SOURCES//,/ }; do
    case $mode in poll|wal) ;; *) fail "--sources: poll or wal, not $mode" ;; esac
    if [ "$mode" = wal ] && [ "$(psql -qAt -d postgres -c 'SHOW wal_level')" != logical ]; then
        note "wal_level is not logical: no WAL pair"; continue
    fi
    for ((r = 1; r <= ROUNDS; r++)); do
        phase "$mode" A "$r" | tee -a "$WORK/raw.tsv"
        phase "$mode" B "$r" | tee -a "$WORK/raw.tsv"
    done
done
# means per mode and phase; B/A; per target: (B - A) / 3
awk -F'\t' 'NR > 1 { k = $1 SUBSEP $2; n[k]++; for (c = 4; c <= 9; c++) s[k, c] += $c; modes[$1] = 1 }
    function mean(md, p, c) { return s[md SUBSEP p, c] / n[md SUBSEP p] }
    END {
        printf "\nmode\tmean\twall_s\twal_bytes_per_event\tcommits_per_event\trows_written_per_event\trelay_cpu_s_per_10k\tpeak_rss_mb\n"
        for (md in modes) {
            for (i = 0; i < 2; i++) {
                p = i ? "B" : "A"
                printf "%s\t%s\t%.2f\t%.0f\t%.4f\t%.2f\t%.3f\t%.1f\n", md, p, mean(md, p, 4), mean(md, p, 5), mean(md, p, 6),
                    mean(md, p, 7), mean(md, p, 8), mean(md, p, 9)
            }
            printf "%s\tB/A", md
            for (c = 4; c <= 9; c++) printf "\t%.2f", mean(md, "A", c) ? mean(md, "B", c) / mean(md, "A", c) : 0
            printf "\n%s\t(B-A)/3", md
            for (c = 4; c <= 9; c++) printf "\t%.4g", (mean(md, "B", c) - mean(md, "A", c)) / 3
            printf "\n"
        }
    }' "$WORK/raw.tsv"
if [ -s "$WORK/problems.log" ]; then
    note "warn/error lines in the relay's logs (first 20 of $(wc -l <"$WORK/problems.log")):"
    head -20 "$WORK/problems.log" | cut -c1-300 >&2
fi
