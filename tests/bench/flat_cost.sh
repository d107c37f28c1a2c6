#!/bin/bash
# tests/bench/flat_cost.sh: does the relay's cost stay flat as the work grows?
# (issue 33). For each source, on a fresh database of a private PostgreSQL:
#   drain  EVENTS pre-filled (transactions of 1,000 outbox_enqueue calls,
#          200-byte payloads, 1,000 aggregates) with the relay stopped, then
#          the relay started with the memory driver; its published counter
#          (metrics endpoint) is sampled every 0.05 s, and the rate of each
#          tenth of the backlog (a million of 10 million) is computed from when
#          the counter crossed it. Bar: the last tenth at >= 0.9 of the first.
#          Poll and cursor: per tenth, the database's time and shared buffers
#          per 1,000 events for each of the relay's statements (pg_stat_statements).
#          WAL mode: then pg_recvlogical reads the same WAL on a slot of its
#          own, made before the fill; the rate of each tenth from when its
#          walsender's sent position crossed the WAL position the fill reached.
#          Source "simplest" is poll mode's baseline instead of the relay: the
#          simplest claim+mark statement (2 pgbench clients, batch 500, no
#          ordering) on the poll schema, counted by the outbox's updates.
#   soak   (--soak-minutes M, after the drain, on the same relay and table)
#          bench_producer commits --soak-rate events/s (default half the
#          drain rate) for M minutes with retention "delete"; every
#          minute the table's size, live and dead rows (the statistics'
#          estimates) and pending events are printed, and at
#          the end the commit-to-acknowledgement p50/p99 per ten minutes
#          (bench_producer's commit times against the memory driver's record).
# It prints figures; it asserts no timing.
#
#   tests/bench/flat_cost.sh [--events N] [--sources cursor,poll,wal,simplest]
#                            [--soak-minutes M] [--soak-rate R] [--out FILE.md]
#
# Defaults: --events 10000000, --sources cursor,poll,wal, no soak, no report.
# Relay: 2 workers, batch 500, ordering aggregate, Release build (OBX_BUILD,
# default build-bench). PostgreSQL: private (port FLAT_PG_PORT, default 56634,
# in /tmp/obx-flat-PORT, made and removed here), fsync off as the test
# instances; FLAT_KEEP=1 keeps the work directory; FLAT_AUTOVACUUM=off turns
# the outbox's autovacuum off for the drain (to see what the vacuums cost it);
# FLAT_RETENTION=delete drains with retention "delete" (default "mark");
# FLAT_TABLE_SET="storage_parameter = value, ..." sets the outbox's own
# parameters for the drain (e.g. autovacuum_vacuum_cost_delay = 0).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OBX_SRC=${OBX_SRC:-$(cd "$HERE/../.." && pwd)}
OBX_BUILD=${OBX_BUILD:-$OBX_SRC/build-bench}
OBX_BIN=${OBX_BIN:-$OBX_BUILD/outbox-relay}
OBX_DRIVERS=${OBX_DRIVERS:-$OBX_BUILD/drivers}
PRODUCER=${PRODUCER:-$OBX_BUILD/tests/bench/bench_producer}
SERVICES=$OBX_SRC/tests/services/services.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $(date -u +%T) $*" >&2; }

EVENTS=10000000 SOURCES=cursor,poll,wal SOAK_MIN=0 SOAK_RATE= OUT=
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --sources) SOURCES=$2; shift ;;
        --soak-minutes) SOAK_MIN=$2; shift ;;
        --soak-rate) SOAK_RATE=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ $((EVENTS % 10000)) = 0 ] && [ "$EVENTS" -gt 0 ] || fail "--events must be a positive multiple of 10,000"
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release)"
[ "$SOAK_MIN" = 0 ] || [ -x "$PRODUCER" ] || fail "$PRODUCER missing: build $OBX_BUILD with the tests"
RETENTION=${FLAT_RETENTION:-mark}
case $RETENTION in mark|delete) ;; *) fail "FLAT_RETENTION must be mark or delete" ;; esac
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

PGF_PORT=${FLAT_PG_PORT:-56634}
PGF_DIR=/tmp/obx-flat-$PGF_PORT
. "$HERE/private_pg.sh"
WORK=$(mktemp -d /tmp/obx-flat.XXXXXX)
DB=obx_bench_flat
MPORT=$((20000 + $$ % 20000))
RELAY_PID= PROD_PID=
cleanup() {
    set +e
    [ -n "$PROD_PID" ] && kill "$PROD_PID" 2>/dev/null
    [ -n "$RELAY_PID" ] && kill -TERM "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null
    private_pg_down
    if [ -n "${FLAT_KEEP:-}" ]; then echo "kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
q() { psql -qAt -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
now() { date +%s.%N; }
published() {
    if [ "$SRC" = simplest ]; then  # its marks, as the statistics have them (flushed every second)
        q "SELECT n_tup_upd - $UPD0 FROM pg_stat_user_tables WHERE relname = 'outbox'"
    else
        { curl -sf "http://127.0.0.1:$MPORT/metrics" || true; } | awk '/^outbox_relay_published_total/ { n += $2 } END { printf "%d", n }'
    fi
}
relay_cpu() {  # user + system seconds of the relay so far
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$RELAY_PID/stat"
}
# stmt_snapshot TENTH: the relay's statements so far, summed by their first
# words (the claim, the record, the cursor's read...), as "tenth|label|calls|ms|hit|read|rows"
stmt_snapshot() {
    q "SELECT $1 || '|' || l || '|' || sum(calls) || '|' || round(sum(total_exec_time)) || '|' ||
              sum(shared_blks_hit) || '|' || sum(shared_blks_read) || '|' || sum(rows)
       FROM (SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 28) AS l, s.* FROM pg_stat_statements s
             JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()
             AND query !~* 'pg_stat|pg_current_wal|autovacuum_count') s
       GROUP BY l HAVING sum(total_exec_time) > 100" >>"$WORK/stmts-$SRC"
}
table_mb() { q "SELECT round(pg_total_relation_size('outbox') / 1048576.0)"; }
live_dead() { q "SELECT n_live_tup || '|' || n_dead_tup FROM pg_stat_user_tables WHERE relname = 'outbox'"; }

# pg_stat_statements says which statement each tenth paid for
PG_EXTRA_CONF="shared_preload_libraries = 'pg_stat_statements'" private_pg_up
PG_VERSION=$(psql -qAt -c "SELECT current_setting('server_version')")
PG_FSYNC=$(psql -qAt -c 'SHOW fsync')

. "$HERE/memory_relay.sh"
cfg() {  # SOURCE RETENTION [record]: the soak's latency needs the driver's record (the drain
    local rec=""  # goes without: writing it costs the relay more CPU than the rest of its work)
    [ -z "${3:-}" ] || rec="record_file = \"$WORK/record.jsonl\";"
    memory_relay_cfg "$WORK/relay.cfg" "${1/simplest/poll}" "$2" "$MPORT" "$rec"
}
# no wait for readiness: the drain samples from the start, and the soak's
# first reading of the counter is 0 either way
start_relay() {
    if [ "$SRC" = simplest ]; then
        simplest_claim_sql "$WORK/simplest.sql"
        pgbench -n -f "$WORK/simplest.sql" -c 2 -j 2 -T 7200 "$DB" >>"$WORK/relay-$SRC.log" 2>&1 &
    else
        "$OBX_BIN" run -c "$WORK/relay.cfg" 2>>"$WORK/relay-$SRC.log" &
    fi
    RELAY_PID=$!
}

# crossings FILE STEP TOTAL: from "t count" samples, the interpolated time the
# counter reached 1 and each multiple of STEP; prints "tenth seconds rate"
crossings() {
    awk -v step="$2" -v total="$3" '
        { t[NR] = $1; c[NR] = $2 }
        function at(target,   i) {
            for (i = 2; i <= NR; i++)
                if (c[i - 1] < target && c[i] >= target)
                    return t[i - 1] + (target - c[i - 1]) / (c[i] - c[i - 1]) * (t[i] - t[i - 1])
            return -1
        }
        END {
            prev = at(1)
            for (k = step; k <= total; k += step) {
                x = at(k)
                printf "%d %.2f %.0f\n", k / step, x - prev, step / (x - prev)
                prev = x
            }
        }' "$1"
}

# recvlogical_tenths: the baseline of WAL mode's drain, PostgreSQL's own
# client on the slot made before the fill: the time its walsender's sent
# position (decoded and sent; the slot's confirmed one moves only once a
# second) crossed each tenth's WAL position, as "tenth seconds rate" in
# recv-tenths (timed from its start)
recvlogical_tenths() {
    local end pid t0
    end=$(q "SELECT pg_current_wal_lsn()")
    : >"$WORK/recv-samples"
    t0=$(now)
    pg_recvlogical -d "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB" -S "${DB}_base" --start --no-loop \
        -o proto_version=1 -o publication_names="${DB}_slot" -F 0 -s 1 -f /dev/null -E "$end" 2>"$WORK/recv.err" &
    pid=$!
    echo "$t0 0" >>"$WORK/recv-samples"
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.05
        echo "$(now) $(q "SELECT coalesce((SELECT max(sent_lsn) - '0/0' FROM pg_stat_replication
                           WHERE application_name = 'pg_recvlogical'), 0)")" >>"$WORK/recv-samples"
    done
    wait "$pid" || fail "pg_recvlogical: $(cat "$WORK/recv.err")"
    echo "$(now) $(q "SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = '${DB}_base'")" >>"$WORK/recv-samples"
    q "SELECT pg_drop_replication_slot('${DB}_base')" >/dev/null
    awk -v step=$((EVENTS / 10)) 'FNR == NR { lsn[++n] = $1; next }
        { t[++m] = $1; c[m] = $2 }
        function at(target,   i) {
            for (i = 2; i <= m; i++)
                if (c[i - 1] < target && c[i] >= target)
                    return t[i - 1] + (target - c[i - 1]) / (c[i] - c[i - 1]) * (t[i] - t[i - 1])
            return -1
        }
        END { prev = t[1]; for (k = 1; k <= n; k++) { x = at(lsn[k])
                printf "%d %.2f %.0f\n", k, x - prev, step / (x - prev); prev = x } }' \
        "$WORK/tenth-lsns" "$WORK/recv-samples" >"$WORK/recv-tenths"
}

# stmt_report FILE EVENTS_PER_TENTH: per statement and tenth, the database's
# time and the shared buffers it touched per 1,000 events (pg_stat_statements)
stmt_report() {
    echo "The relay's statements per tenth (pg_stat_statements; ms of execution and shared buffers hit + read, per 1,000 events):"
    echo
    echo "| statement | per 1,000 events | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -F'|' -v per="$2" '
        { k = $1; l = $2; ms[l, k] = $4; bl[l, k] = $5 + $6; if (!(l in seen)) { seen[l] = 1; L[++nl] = l } }
        END {
            for (i = 1; i <= nl; i++) for (what = 1; what <= 2; what++) {
                l = L[i]; line = sprintf("| `%s` | %s |", l, what == 1 ? "ms" : "buffers")
                for (k = 1; k <= 10; k++) {
                    d = what == 1 ? ms[l, k] - ms[l, k - 1] : bl[l, k] - bl[l, k - 1]
                    line = line sprintf(" %.0f |", d * 1000 / per)
                }
                print line
            }
        }' "$1"
}

drain() {
    local t0 fill_s size0
    note "$SRC: fresh database, $EVENTS events pre-filled with the relay stopped"
    psql -qAt -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
    cfg "$SRC" "$RETENTION"
    "$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null  # in WAL mode the slot too, before the fill
    t0=$(now)
    # WAL mode's baseline reads the same WAL through a slot of its own
    [ "$SRC" != wal ] || q "SELECT 1 FROM pg_create_logical_replication_slot('${DB}_base', 'pgoutput')" >/dev/null
    # two sessions, each on its own half of the aggregates (no lock between
    # them), a tenth at a time: the WAL position after each tenth is kept
    local half tenth fills
    : >"$WORK/tenth-lsns"
    for ((tenth = 1; tenth <= 10; tenth++)); do
        fills=()
        for half in 0 1; do
            q "DO \$\$ BEGIN FOR i IN 1..$((EVENTS / 20000)) LOOP
                 PERFORM outbox_enqueue('Order', 'agg-' || ($half * 500 + g % 500), 'order.created',
                         jsonb_build_object('n', g, 'pad', repeat('x', 180))) FROM generate_series(1, 1000) g;
                 COMMIT; END LOOP; END \$\$" &
            fills+=($!)
        done
        wait "${fills[0]}" && wait "${fills[1]}" || fail "$SRC: the fill failed"
        q "SELECT pg_current_wal_lsn() - '0/0'" >>"$WORK/tenth-lsns"
    done
    q "VACUUM ANALYZE outbox"
    [ "${FLAT_AUTOVACUUM:-on}" = on ] || q "ALTER TABLE outbox SET (autovacuum_enabled = off)"
    [ -z "${FLAT_TABLE_SET:-}" ] || q "ALTER TABLE outbox SET ($FLAT_TABLE_SET)"
    q "CHECKPOINT"
    fill_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
    size0=$(table_mb)
    note "$SRC: filled in $fill_s s ($size0 MB); draining"
    # sampled from the relay's start: the first tenth begins at the first
    # published event, between the last sample at 0 and the next
    local n=0 nap=0.01 i=0 av0
    av0=$(q "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'outbox'")
    : >"$WORK/samples-$SRC"
    : >"$WORK/vacuum-$SRC"
    : >"$WORK/stmts-$SRC"
    q "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
    UPD0=$(q "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'outbox'")
    local snap=1
    t0=$(now)
    start_relay
    while [ "$n" -lt "$EVENTS" ]; do
        sleep $nap
        n=$(published)
        echo "$(now) $n" >>"$WORK/samples-$SRC"
        # twice a second: is a vacuum of the outbox running (what the tenths pay for besides the relay)
        ((++i % 10)) || echo "$n $(q "SELECT count(*) FROM pg_stat_progress_vacuum p JOIN pg_class c ON c.oid = p.relid
                                      WHERE p.datname = current_database() AND c.relname = 'outbox'")" >>"$WORK/vacuum-$SRC"
        [ "$n" = 0 ] || nap=0.05
        [ "$n" -lt $((snap * EVENTS / 10)) ] || { stmt_snapshot $snap; snap=$((snap + 1)); }
        kill -0 "$RELAY_PID" 2>/dev/null || fail "$SRC: the relay exited ($(tail -3 "$WORK/relay-$SRC.log"))"
        awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 7200) }' && fail "$SRC: not drained in 2 hours"
    done
    DRAIN_S=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
    DRAIN_CPU=$(relay_cpu)
    crossings "$WORK/samples-$SRC" $((EVENTS / 10)) "$EVENTS" >"$WORK/millions-$SRC"
    [ "$SRC" != wal ] || recvlogical_tenths
    FIRST=$(awk 'NR == 1 { print $3 }' "$WORK/millions-$SRC")
    LAST=$(awk 'END { print $3 }' "$WORK/millions-$SRC")
    MEAN=$(awk -v n="$EVENTS" -v s="$DRAIN_S" 'BEGIN { printf "%.0f", n / s }')
    {
        echo "### $SRC: $EVENTS events drained"
        echo
        echo "Filled in $fill_s s; table with indexes $size0 MB before the drain, $(table_mb) MB after;"
        echo "drained in $DRAIN_S s (mean $MEAN events/s, $([ "$SRC" = simplest ] && echo pgbench || echo relay) CPU $DRAIN_CPU s)."
        echo
        if [ "$SRC" = wal ]; then
            echo "| tenth | seconds | events/s | \`pg_recvlogical\` events/s | relay / \`pg_recvlogical\` |"
            echo "|---:|---:|---:|---:|---:|"
            paste -d' ' "$WORK/millions-$SRC" "$WORK/recv-tenths" |
                awk '{ printf "| %d | %s | %s | %s | %.2f |\n", $1, $2, $3, $6, $3 / $6 }'
            echo
            awk 'NR == 1 { f = $3 } END { printf "`pg_recvlogical` on a slot of its own (pgoutput, the relay'"'"'s publication, into /dev/null, status every second), after the relay, on the same WAL: its last tenth against its first %.2f; a tenth is the WAL the fill wrote for it, timed by the walsender'"'"'s sent position.\n", $3 / f }' "$WORK/recv-tenths"
        else
            echo "| tenth | seconds | events/s | a vacuum of the outbox running |"
            echo "|---:|---:|---:|---:|"
            awk -v step=$((EVENTS / 10)) 'FNR == NR { k = int($1 / step) + 1; all[k]++; on[k] += $2 > 0; next }
                { printf "| %d | %s | %s | %.0f%% |\n", $1, $2, $3, all[$1] ? 100 * on[$1] / all[$1] : 0 }' \
                "$WORK/vacuum-$SRC" "$WORK/millions-$SRC"
            echo
            echo "Autovacuums of the outbox during the drain: $(q "SELECT autovacuum_count - $av0 FROM pg_stat_user_tables WHERE relname = 'outbox'")."
        fi
        echo
        [ "$SRC" = wal ] || stmt_report "$WORK/stmts-$SRC" $((EVENTS / 10))
        echo
        awk -v f="$FIRST" -v l="$LAST" 'BEGIN { printf "Last tenth against the first: **%.2f** (bar 0.9: %s).\n",
            l / f, (l / f >= 0.9 ? "met" : "not met") }'
        echo
    } >"$WORK/drain-$SRC.md"
    cat "$WORK/drain-$SRC.md"
}

soak() {
    local rate secs m size pend t_end
    rate=${SOAK_RATE:-$((MEAN / 2))}
    secs=$((SOAK_MIN * 60))
    kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; RELAY_PID=
    cfg "$SRC" delete record
    start_relay
    note "$SRC: soak, $rate events/s for $SOAK_MIN min, retention delete"
    echo "minute|table MB|live rows|dead rows|pending|published so far" >"$WORK/soak-$SRC.tsv"
    echo "0|$(table_mb)|$(live_dead)|-|$(published)" >>"$WORK/soak-$SRC.tsv"
    "$PRODUCER" -d "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB" -r "$rate" -s "$secs" \
        -o "$WORK/commits.tsv" >"$WORK/producer.out" 2>&1 &
    PROD_PID=$!
    for ((m = 1; m <= SOAK_MIN; m++)); do
        sleep 60
        size=$(table_mb)
        pend=$(pending)
        echo "$m|$size|$(live_dead)|$pend|$(published)" >>"$WORK/soak-$SRC.tsv"
        note "$SRC: soak minute $m: table $size MB, pending $pend"
    done
    wait "$PROD_PID" || note "producer behind its rate: $(cat "$WORK/producer.out")"
    PROD_PID=
    t_end=$(now)
    # every committed event published (the counter restarted with the relay)
    while [ "$(published)" -lt "$(wc -l <"$WORK/commits.tsv")" ]; do
        sleep 0.5
        awk -v a="$t_end" -v b="$(now)" 'BEGIN { exit !(b - a > 600) }' && fail "$SRC: not caught up 10 minutes after the soak"
    done
    kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; RELAY_PID=
    # commit time (bench_producer) against the first acknowledgement (record)
    awk -F'\t' 'NR == FNR { c[$1] = $2; next }
        $0 ~ /"status":"ok"/ {
            match($0, /"event_id":"[^"]*"/); id = substr($0, RSTART + 12, RLENGTH - 13)
            match($0, /"t_us":[0-9]+/); t = substr($0, RSTART + 7, RLENGTH - 7)
            if ((id in c) && !(id in seen)) { seen[id] = 1; print c[id], (t - c[id]) / 1000 }
        }' "$WORK/commits.tsv" "$WORK/record.jsonl" | sort -n >"$WORK/lat"
    {
        echo "### $SRC: soak, $rate events/s for $SOAK_MIN minutes, retention delete"
        echo
        echo "Producer: $(cat "$WORK/producer.out")"
        echo
        echo "| minute | table MB | live rows | dead rows | pending | published so far |"
        echo "|---:|---:|---:|---:|---:|---:|"
        tail -n +2 "$WORK/soak-$SRC.tsv" | awk -F'|' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }'
        echo
        echo "Commit-to-acknowledgement per ten minutes (ms):"
        echo
        echo "| minutes | events | p50 | p99 | max |"
        echo "|---|---:|---:|---:|---:|"
        awk 'NR == 1 { t0 = $1 } { print int(($1 - t0) / 600e6), $2 }' "$WORK/lat" | sort -k1,1n -k2,2g |
            awk '{ v[$1, ++n[$1]] = $2 } END {
                for (k = 0; k in n; k++) {
                    c = n[k]; p50 = v[k, int(c * 0.5) + 1]; p99 = v[k, int(c * 0.99) + 1]
                    printf "| %d-%d | %d | %.1f | %.1f | %.1f |\n", k * 10, k * 10 + 10, c, p50, p99, v[k, c] }
            }'
        echo
    } >"$WORK/soak-$SRC.md"
    cat "$WORK/soak-$SRC.md"
}
pending() {
    if [ "$SRC" = wal ]; then echo -; else q "$(memory_relay_pending_sql "$SRC")"; fi
}

IFS=, read -r -a SRCS <<<"$SOURCES"
note "flat cost: $EVENTS events, sources $SOURCES, PostgreSQL $PG_VERSION (private, fsync=$PG_FSYNC)"
for SRC in "${SRCS[@]}"; do
    case $SRC in poll|wal|cursor) ;; simplest) [ "$SOAK_MIN" = 0 ] || fail "no soak for simplest" ;; *) fail "unknown source $SRC" ;; esac
    drain
    [ "$SOAK_MIN" = 0 ] || soak
    [ -z "$RELAY_PID" ] || { kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; RELAY_PID=; }
    psql -qAt -c "DROP DATABASE $DB WITH (FORCE)" >/dev/null
done

if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    {
        echo "# Cost that stays flat as the work grows (issue 33)"
        echo
        echo "\`tests/bench/flat_cost.sh --events $EVENTS --sources $SOURCES --soak-minutes $SOAK_MIN${SOAK_RATE:+ --soak-rate $SOAK_RATE}\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
        echo "commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), Release build."
        echo
        echo "- Machine: $(nproc) cores, load average before the run $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "- PostgreSQL $PG_VERSION, private instance, fsync = $PG_FSYNC"
        echo "- Relay: memory driver, 2 workers, batch 500, ordering aggregate; drain with retention $RETENTION"
        [ "${FLAT_AUTOVACUUM:-on}" = on ] || echo "- The outbox's autovacuum off during the drain (FLAT_AUTOVACUUM=off)"
        [ -z "${FLAT_TABLE_SET:-}" ] || echo "- The outbox's parameters for the drain: $FLAT_TABLE_SET (FLAT_TABLE_SET)"
        echo
        cat "$WORK"/drain-*.md
        cat "$WORK"/soak-*.md 2>/dev/null || true # no soak asked
    } >"$OUT"
    note "report: $OUT"
fi
