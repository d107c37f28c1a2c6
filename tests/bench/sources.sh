#!/bin/bash
# tests/bench/sources.sh: what one process relaying 10 outboxes (a config's
# `sources`) costs against 10 processes relaying one outbox each. 10 outbox
# databases (bsrc_0..bsrc_9) on the shared PostgreSQL, each pre-filled with
# the same backlog (EVENTS outbox_enqueue rows, 100 aggregates); memory driver
# (acknowledges at once), 1 worker, poll_interval_ms 200, the other relay
# settings at their defaults; the last WAL of them (default 2 when wal_level
# is logical, else 0) in WAL mode, the rest polled. Two phases alternated
# A B A B ... for ROUNDS rounds, each on freshly made databases:
#   A  one process: `run --drain` of one config listing the 10 sources;
#   B  10 processes: `run --drain` of 10 single-source configs, started together.
# Per phase: wall time from the start until every relay has exited (events/s
# over all 10 outboxes), CPU seconds of the relay process(es) (user+sys, from
# /usr/bin/time, per 100k events), peak RSS summed over the processes, the
# most database sessions the relays held at once (pg_stat_activity,
# application_name outbox-relay*, sampled every 0.1 s), when the first and
# the last source finished (their "relay stopped" lines: a source starved by
# the others shows as a late last), and warn/error lines in the logs. Then the
# ratio one process / ten processes of the means. Delivery is checked (every
# source reports every event published); timing never is.
#
# Then, unless --load 0, phase L: the 10 sources in one process UNDER LOAD
# and through one database's outage. Empty outboxes; one producer per
# database (psql, a DO loop committing 1-5 outbox_enqueue per transaction,
# paced to RATE events/s, each transaction also adding its count to a
# bench_committed row) for LOAD seconds while the relay (`run`, /metrics on)
# relays them; from LOAD/3 to 2*LOAD/3 source DOWN's database refuses
# connections (ALTER DATABASE ... ALLOW_CONNECTIONS false, then every backend
# of it but the producer's terminated: the producer keeps committing). The
# relay's /metrics is scraped every second; per source, the published rate
# (outbox_relay_published_total{source=...}) before, during and after the
# outage and during/before; at the end (the relay given up to --timeout s to
# catch up) every source's published count against its committed count, the
# polled outboxes' unpublished rows, and how long DOWN took to catch up.
#
#   tests/bench/sources.sh [--events N] [--rounds N] [--wal N] [--payload jsonb|text]
#                          [--timeout S] [--load S] [--down I] [--rate N] [--keep]
#
# --rounds 0 runs phase L alone. --payload text turns the polled outboxes'
# payload column into text after init-db (outbox_enqueue's jsonb is cast on
# insert): it dodged a bug of the WIP commit this script was first run on
# (a payload type read from freed memory), fixed before sources were merged.
# A phase still running after --timeout seconds (default 180) is stopped
# (SIGTERM): its sources that did not publish everything are counted as
# stuck, the phase is left out of the means, and the script exits 1.
#
# Needs the shared services (tests/services/services.sh) and a Release build
# (OBX_BUILD, default build-bench; OBX_BIN, OBX_DRIVERS override), /usr/bin/time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/bench_lib.sh"

N_SRC=10 EVENTS=20000 ROUNDS=2 WAL='' KEEP='' PAYLOAD=jsonb LIMIT=180
LOAD=60 DOWN=3 RATE=200
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --wal) WAL=$2; shift ;;
        --payload) PAYLOAD=$2; shift ;;
        --timeout) LIMIT=$2; shift ;;
        --load) LOAD=$2; shift ;;
        --down) DOWN=$2; shift ;;
        --rate) RATE=$2; shift ;;
        --keep) KEEP=1 ;; # keep the work directory (configs, logs, raw figures)
        -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release) or set OBX_BIN"
[ -x /usr/bin/time ] || fail "/usr/bin/time missing (package time): it reports CPU and peak RSS"
# WAL sources need logical decoding; without it every source is polled
if [ -z "$WAL" ]; then
    if [ "$(psql -qAt -d postgres -c 'SHOW wal_level')" = logical ]; then WAL=2; else WAL=0; fi
fi
[ "$WAL" -le "$N_SRC" ] || fail "--wal $WAL: at most $N_SRC"
case $PAYLOAD in jsonb|text) ;; *) fail "--payload $PAYLOAD: jsonb or text" ;; esac

WORK=$(mktemp -d /tmp/obx-bsrc.XXXXXX)
TOTAL=$((N_SRC * EVENTS))
RELAY_PIDS=()
cleanup() {
    set +e
    local p
    for p in "${RELAY_PIDS[@]}"; do stop_relay "$p"; done
    for p in "${RELAY_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    drop_all
    if [ -n "$KEEP" ]; then note "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT # so that cleanup runs (drops the databases) when interrupted
trap 'exit 143' TERM

# stop_relay PID: SIGTERM to the relay under /usr/bin/time PID (time itself
# would die of it and leave the relay running, its figures unwritten)
stop_relay() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill -TERM "$child" 2>/dev/null || true; done
}
# bench2_ first: the names every bench database takes on this shared server
db() { echo "bench2_src_$1"; }
dsn() { echo "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$(db "$1")"; }
is_wal() { [ "$1" -ge $((N_SRC - WAL)) ]; }
# a WAL source's slot is named after its database: slot names are server-wide,
# and the default (<table>_relay) would be the same in every database
relay_settings() {
    local wal=""
    is_wal "$1" && wal="source = \"wal\"; wal = { slot = \"$(db "$1")\"; };"
    echo "drivers_dir = \"$OBX_DRIVERS\"; workers = 1; poll_interval_ms = 200; $wal"
}
SHARED='outputs = ( { name = "mem"; driver = "memory"; options = { }; } );
routes = ( { output = "mem"; destination = "bench"; } );
log = { level = "info"; };'

# write_cfgs: $WORK/all.cfg (phase A: the 10 as sources) and $WORK/one_I.cfg
# (phase B: the old single-source format), the same settings in both
write_cfgs() {
    local i
    {
        echo "database = { conninfo = \"$(dsn 0)\"; };"
        echo "relay = { $(relay_settings 0) };"
        echo "$SHARED"
        echo "sources = ("
        for ((i = 0; i < N_SRC; i++)); do
            echo "  { name = \"s$i\"; database = { conninfo = \"$(dsn "$i")\"; };"
            echo "    relay = { $(relay_settings "$i") }; }$([ $i -lt $((N_SRC - 1)) ] && echo ,)"
        done
        echo ");"
    } >"$WORK/all.cfg"
    for ((i = 0; i < N_SRC; i++)); do
        {
            echo "database = { conninfo = \"$(dsn "$i")\"; };"
            echo "relay = { $(relay_settings "$i") };"
            echo "$SHARED"
        } >"$WORK/one_$i.cfg"
    done
    chmod 600 "$WORK"/*.cfg
}

drop_all() {
    local i
    for ((i = 0; i < N_SRC; i++)); do
        psql -qAt -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                                  WHERE slot_name = '$(db "$i")'" >/dev/null 2>&1
        psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $(db "$i") WITH (FORCE)" >/dev/null 2>&1
    done
    return 0
}

# fresh: the 10 databases made anew, schema by init-db of the sources config
# (the same schema and slots for both phases), each filled with EVENTS rows in
# parallel, then VACUUM ANALYZE and a CHECKPOINT so no phase pays for the
# previous one's writes
fresh() {
    local i pids=() events=${1:-$EVENTS}
    drop_all
    for ((i = 0; i < N_SRC; i++)); do
        psql -qAt -d postgres -c "CREATE DATABASE $(db "$i")" >/dev/null
    done
    "$OBX_BIN" init-db -c "$WORK/all.cfg" >>"$WORK/init.log" 2>&1 || { cat "$WORK/init.log" >&2; fail "init-db"; }
    if [ "$PAYLOAD" = text ]; then
        # polled ones only: the WAL source never reads it (and a trigger of the
        # WAL schema holds the column's type)
        for ((i = 0; i < N_SRC; i++)); do
            is_wal "$i" || psql -qAt -v ON_ERROR_STOP=1 -d "$(db "$i")" -c "ALTER TABLE outbox ALTER COLUMN payload TYPE text" >/dev/null
        done
    fi
    for ((i = 0; i < N_SRC && events > 0; i++)); do
        psql -qAt -v ON_ERROR_STOP=1 -d "$(db "$i")" -c "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 100),
              'order.created', jsonb_build_object('n', g))) FROM generate_series(1, $events) g" >/dev/null &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || fail "enqueue"; done
    for ((i = 0; i < N_SRC; i++)); do psql -qAt -d "$(db "$i")" -c "VACUUM ANALYZE outbox" >/dev/null; done
    psql -qAt -d postgres -c "CHECKPOINT" >/dev/null
}

conns() {
    psql -qAt -d postgres -c "SELECT count(*) FROM pg_stat_activity
                              WHERE application_name LIKE 'outbox-relay%' AND datname LIKE 'bench2\_src\_%'"
}
epoch() { date -d "$1" +%s.%N; } # a log line's ISO stamp

# phase A|B ROUND: one drain of the 10 backlogs; prints one tab-separated line
phase() {
    local kind=$1 round=$2 i t0 t1 n max_conn=0 alive rc cpu=0 rss=0 first last problems stuck timed_out=0
    fresh
    rm -f "$WORK"/time.* "$WORK"/relay.*.log
    RELAY_PIDS=()
    t0=$(date +%s.%N)
    if [ "$kind" = A ]; then
        /usr/bin/time -f '%U %S %M' -o "$WORK/time.0" "$OBX_BIN" run --drain -c "$WORK/all.cfg" \
            >"$WORK/relay.0.log" 2>&1 &
        RELAY_PIDS+=($!)
    else
        for ((i = 0; i < N_SRC; i++)); do
            /usr/bin/time -f '%U %S %M' -o "$WORK/time.$i" "$OBX_BIN" run --drain -c "$WORK/one_$i.cfg" \
                >"$WORK/relay.$i.log" 2>&1 &
            RELAY_PIDS+=($!)
        done
    fi
    # the sessions are sampled while the relays run (the most seen at once);
    # a source that never drains is stopped after LIMIT seconds rather than
    # hanging the run (SIGTERM: the relay still logs what each source did)
    while :; do
        alive=0
        for i in "${RELAY_PIDS[@]}"; do kill -0 "$i" 2>/dev/null && alive=1; done
        [ $alive = 1 ] || break
        n=$(conns)
        [ "$n" -gt "$max_conn" ] && max_conn=$n
        if [ $timed_out = 0 ] && awk -v a="$t0" -v b="$(date +%s.%N)" -v l="$LIMIT" 'BEGIN { exit !(b - a > l) }'; then
            note "phase $kind round $round: still running after $LIMIT s: stopping it"
            timed_out=1
            for i in "${RELAY_PIDS[@]}"; do stop_relay "$i"; done
        fi
        sleep 0.1
    done
    t1=$(date +%s.%N)
    for i in "${RELAY_PIDS[@]}"; do
        rc=0
        wait "$i" || rc=$?
        [ $rc = 0 ] || [ $timed_out = 1 ] || { tail -20 "$WORK"/relay.*.log >&2; fail "phase $kind: a relay exited $rc"; }
    done
    RELAY_PIDS=()
    for f in "$WORK"/time.*; do
        read -r u s m < <(tail -1 "$f") # time's last line (a signal note may precede it)
        cpu=$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN { print c + u + s }')
        rss=$((rss + m))
    done
    # every source's "relay stopped" line: when it finished, its count, its
    # name (the line's [sN] with sources; a single-source log's own number)
    : >"$WORK/stops"
    for f in "$WORK"/relay.*.log; do
        i=${f##*/relay.} i=${i%.log}
        grep 'relay stopped:' "$f" | while read -r ts rest; do
            echo "$(epoch "$ts") $(sed -n 's/.*published \([0-9]*\),.*/\1/p' <<<"$rest")" \
                "$(sed -n 's/^[a-z]* *\[\(s[0-9]*\)\].*/\1/p' <<<"$rest" | grep . || echo "s$i")"
        done >>"$WORK/stops" || true
    done
    # per source, when it finished in this phase ("-": never), for the table at the end
    for ((i = 0; i < N_SRC; i++)); do
        awk -v t="$t0" -v e="$EVENTS" -v s="s$i" '$3 == s && $2 == e { d = sprintf("%.2f", $1 - t) } END { print d ? d : "-" }' "$WORK/stops"
    done >"$WORK/done.$kind$round"
    mkdir -p "$WORK/$kind$round" && cp "$WORK"/relay.*.log "$WORK/$kind$round/" # kept with --keep
    # stuck: a source that did not publish its whole backlog (or never said)
    stuck=$(awk -v e="$EVENTS" -v n="$N_SRC" '$2 == e { done++ } END { print n - done }' "$WORK/stops")
    [ $timed_out = 1 ] || [ "$stuck" = 0 ] || fail "phase $kind: $stuck sources exited without publishing their $EVENTS events"
    # when the first and the last source finished (of those that did)
    first=$(awk -v t="$t0" -v e="$EVENTS" '$2 == e && (!n++ || $1 < m) { m = $1 } END { printf n ? "%.2f" : "-", m - t }' "$WORK/stops")
    last=$(awk -v t="$t0" -v e="$EVENTS" '$2 == e && (!n++ || $1 > m) { m = $1 } END { printf n ? "%.2f" : "-", m - t }' "$WORK/stops")
    # anything the relays warned about, kept for the report
    problems=$(cat "$WORK"/relay.*.log | grep -cE '^[^ ]+ (warn|error|fatal)' || true)
    grep -hE '^[^ ]+ (warn|error|fatal)' "$WORK"/relay.*.log | sed "s/^/phase $kind round $round: /" >>"$WORK/problems.log" || true
    awk -v k="$kind" -v r="$round" -v e="$TOTAL" -v t0="$t0" -v t1="$t1" -v c="$cpu" -v m="$rss" -v n="$max_conn" \
        -v f="$first" -v l="$last" -v p="$problems" -v s="$stuck" 'BEGIN {
        w = t1 - t0
        printf "%s\t%d\t%.2f\t%.0f\t%.2f\t%.1f\t%d\t%s\t%s\t%d\t%d\n", k, r, w, e / w, c * 100000 / e, m / 1024, n, f, l, p, s }'
}

write_cfgs
note "sources: $N_SRC outboxes x $EVENTS events ($WAL WAL, $((N_SRC - WAL)) polled), memory driver, 1 worker,"
note "         poll_interval_ms 200; $ROUNDS rounds of A (1 process, 10 sources) then B (10 processes); load: $(cut -d' ' -f1-3 /proc/loadavg)"
HDR='phase\tround\twall_s\tevents_per_s\tcpu_s_per_100k\tpeak_rss_mb_sum\tdb_sessions\tfirst_source_done_s\tlast_source_done_s\twarn_error_lines\tstuck_sources'
printf "$HDR\n" | tee "$WORK/raw.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
    phase A "$r" | tee -a "$WORK/raw.tsv"
    phase B "$r" | tee -a "$WORK/raw.tsv"
done
# the means of each phase over its clean rounds (no stuck source), and one
# process / ten processes
awk -F'\t' 'NR > 1 && $11 == 0 { n[$1]++; for (c = 3; c <= 10; c++) s[$1, c] += $c }
    function mean(p, c) { return s[p, c] / n[p] }
    END {
        printf "\nmean\trounds\tevents_per_s\tcpu_s_per_100k\tpeak_rss_mb_sum\tdb_sessions\tlast_source_done_s\n"
        for (k = 0; k < 2; k++) {
            p = k ? "B" : "A"
            if (n[p]) printf "%s\t%d\t%.0f\t%.2f\t%.1f\t%.1f\t%.2f\n", p, n[p], mean(p, 4), mean(p, 5), mean(p, 6), mean(p, 7), mean(p, 9)
            else printf "%s\t0\t(no clean round)\n", p
        }
        if (n["A"] && n["B"])
            printf "A/B\t-\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", mean("A", 4) / mean("B", 4), mean("A", 5) / mean("B", 5),
                mean("A", 6) / mean("B", 6), mean("A", 7) / mean("B", 7), mean("A", 9) / mean("B", 9)
    }' "$WORK/raw.tsv"
if [ -s "$WORK/problems.log" ]; then
    note "warn/error lines in the relays' logs (first 20 of $(wc -l <"$WORK/problems.log")):"
    head -20 "$WORK/problems.log" | cut -c1-300 >&2
fi
# when each source finished, phase by phase: one starved by the others finishes late
[ "$ROUNDS" = 0 ] || note "when each source finished (s after its phase began; -: never):"
PHASES=$(for ((r = 1; r <= ROUNDS; r++)); do echo "A$r B$r"; done)
[ "$ROUNDS" = 0 ] || {
    printf 'source'; for ph in $PHASES; do printf '\t%s' "$ph"; done; echo
    for ((i = 0; i < N_SRC; i++)); do
        printf 's%d%s' "$i" "$(is_wal "$i" && echo ' (wal)')"
        for ph in $PHASES; do printf '\t%s' "$(sed -n "$((i + 1))p" "$WORK/done.$ph")"; done
        echo
    done
} >&2
# ---- phase L: the 10 sources in one process under load, one database away for a while ----
# wait_published FILE: the last scrape's published_total per source ("sN value" lines)
last_published() {
    curl -sf "http://127.0.0.1:$MPORT/metrics" 2>/dev/null |
        sed -n 's/^outbox_relay_published_total{source="\([^"]*\)"[^}]*} \([0-9.e+]*\)$/\1 \2/p'
}
load_phase() {
    local i t0 t1 t2 now pids=() tdown tup caught='' all_done
    MPORT=$((20000 + $$ % 20000))
    fresh 0
    for ((i = 0; i < N_SRC; i++)); do
        psql -qAt -v ON_ERROR_STOP=1 -d "$(db "$i")" -c "CREATE TABLE bench_committed (n bigint NOT NULL);
            INSERT INTO bench_committed VALUES (0)" >/dev/null
    done
    { cat "$WORK/all.cfg"; echo "metrics = { listen = \"127.0.0.1:$MPORT\"; };"; } >"$WORK/load.cfg"
    chmod 600 "$WORK/load.cfg"
    rm -f "$WORK/relay.L.log" "$WORK/time.L" "$WORK/scrape.L"
    RELAY_PIDS=()
    /usr/bin/time -f '%U %S %M' -o "$WORK/time.L" "$OBX_BIN" run -c "$WORK/load.cfg" >"$WORK/relay.L.log" 2>&1 &
    RELAY_PIDS+=($!)
    for ((i = 0; i < 100; i++)); do [ "$(last_published | wc -l)" -ge "$N_SRC" ] && break; sleep 0.1; done
    [ "$(last_published | wc -l)" -ge "$N_SRC" ] || { tail -20 "$WORK/relay.L.log" >&2; fail "phase L: /metrics does not list the $N_SRC sources"; }
    # producers: RATE events/s each, paced on the events committed so far
    t0=$(date +%s.%N)
    for ((i = 0; i < N_SRC; i++)); do
        PGAPPNAME=bench2_producer PGOPTIONS="-c client_min_messages=notice" psql -qAt -v ON_ERROR_STOP=1 -d "$(db "$i")" -c "DO \$\$
            DECLARE t0 timestamptz := clock_timestamp(); k int; total bigint := 0;
            BEGIN
                WHILE clock_timestamp() < t0 + interval '$LOAD seconds' LOOP
                    k := 1 + floor(random() * 5)::int;
                    PERFORM outbox_enqueue('Order', 'agg-' || floor(random() * 1000)::int, 'order.created',
                                           jsonb_build_object('n', total + g)) FROM generate_series(1, k) g;
                    UPDATE bench_committed SET n = n + k;
                    COMMIT;
                    total := total + k;
                    RAISE NOTICE 'c % %', extract(epoch FROM clock_timestamp()), total;
                    PERFORM pg_sleep(greatest(0, total::float8 / $RATE - extract(epoch FROM clock_timestamp() - t0)));
                END LOOP;
            END \$\$" >"$WORK/producer.$i.log" 2>&1 &
        pids+=($!)
    done
    tdown=$(awk -v l="$LOAD" 'BEGIN { print l / 3 }') tup=$(awk -v l="$LOAD" 'BEGIN { print 2 * l / 3 }')
    # scrape every second until every producer is done, the outage in the middle
    local state=before
    while :; do
        # stamped after the scrape: a lag read against it is never less than the true one
        last_published >"$WORK/pub.now"
        now=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
        sed "s/^/$now /" "$WORK/pub.now" >>"$WORK/scrape.L"
        if [ $state = before ] && awk -v n="$now" -v d="$tdown" 'BEGIN { exit !(n >= d) }'; then
            psql -qAt -d postgres -c "ALTER DATABASE $(db "$DOWN") ALLOW_CONNECTIONS false" \
                -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$(db "$DOWN")'
                    AND pid <> pg_backend_pid() AND application_name IS DISTINCT FROM 'bench2_producer'" >"$WORK/down.L"
            t1=$now state=down
            note "phase L: $(db "$DOWN") refuses connections at ${now%.*} s ($(tail -1 "$WORK/down.L") backends ended)"
        elif [ $state = down ] && awk -v n="$now" -v u="$tup" 'BEGIN { exit !(n >= u) }'; then
            psql -qAt -d postgres -c "ALTER DATABASE $(db "$DOWN") ALLOW_CONNECTIONS true" >/dev/null
            t2=$now state=up
            note "phase L: $(db "$DOWN") accepts connections again at ${now%.*} s"
        fi
        all_done=1
        for i in "${pids[@]}"; do kill -0 "$i" 2>/dev/null && all_done=0; done
        [ $all_done = 1 ] && break
        sleep 1
    done
    for ((i = 0; i < N_SRC; i++)); do
        wait "${pids[$i]}" || { cat "$WORK/producer.$i.log" >&2; fail "phase L: producer $i failed"; }
    done
    local tload=$now
    for ((i = 0; i < N_SRC; i++)); do
        echo "s$i $(psql -qAt -d "$(db "$i")" -c 'SELECT n FROM bench_committed')"
    done >"$WORK/committed.L"
    # the relay catches up (up to LIMIT s more), scraped every second
    while :; do
        last_published >"$WORK/pub.now"
        now=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
        sed "s/^/$now /" "$WORK/pub.now" >>"$WORK/scrape.L"
        if awk 'NR == FNR { c[$1] = $2; next } { p[$1] = $2 } END { for (s in c) if (p[s] < c[s]) exit 1 }' \
            "$WORK/committed.L" "$WORK/pub.now"; then caught=$now; break; fi
        awk -v n="$now" -v t="$tload" -v l="$LIMIT" 'BEGIN { exit !(n - t > l) }' && break
        sleep 1
    done
    for i in "${RELAY_PIDS[@]}"; do stop_relay "$i"; wait "$i" || true; done
    RELAY_PIDS=()
    grep -hE '^[^ ]+ (warn|error|fatal)' "$WORK/relay.L.log" | sed "s/^/phase L: /" >>"$WORK/problems.log" || true
    note "phase L: $N_SRC sources ($WAL WAL), producers at $RATE events/s each for $LOAD s, s$DOWN's database away from ${t1%.*} to ${t2%.*} s;"
    note "         every source caught up at: ${caught:-NEVER (after $LIMIT s)} s; relay CPU $(tail -1 "$WORK/time.L" | awk '{ print $1 + $2 }') s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
    # per source, over [5, t1], [t1 + 2, t2], [t2 + 5, tload] (before, during,
    # after the outage): the published rate (published_total's growth between
    # the first and last scrape inside the window), the committed rate (the
    # producer's "c EPOCH TOTAL" notices) and the most events committed but
    # not yet published at a scrape (lag); at the end committed, published,
    # the polled outboxes' unpublished rows and every outbox's rows
    for ((i = 0; i < N_SRC; i++)); do
        local unpub=-
        is_wal "$i" || unpub=$(psql -qAt -d "$(db "$i")" -c "SELECT count(*) FROM outbox WHERE published_at IS NULL")
        echo "s$i $(is_wal "$i" && echo wal || echo poll) $unpub $(psql -qAt -d "$(db "$i")" -c "SELECT count(*) FROM outbox")"
    done >"$WORK/rows.L"
    for ((i = 0; i < N_SRC; i++)); do
        sed -n "s/^NOTICE: *c \([0-9.]*\) \([0-9]*\)$/\1 s$i \2/p" "$WORK/producer.$i.log"
    done | awk -v t0="$t0" '{ printf "%.3f %s %s\n", $1 - t0, $2, $3 }' >"$WORK/produced.L"
    awk -v t1="$t1" -v t2="$t2" -v tl="$tload" -v down="s$DOWN" -v rate="$RATE" '
        function win(t,  w) { return t >= 5 && t <= t1 ? 0 : t >= t1 + 2 && t <= t2 ? 1 : t >= t2 + 5 && t <= tl ? 2 : -1 }
        FILENAME ~ /committed/ { c[$1] = $2; next }
        FILENAME ~ /rows/ { kind[$1] = $2; unpub[$1] = $3; rows[$1] = $4; next }
        FILENAME ~ /produced/ { s = $2; k = ++np[s]; pt[s, k] = $1; pv[s, k] = $3
            w = win($1); if (w >= 0) { if (!((s, w) in cta)) { cta[s, w] = $1; cva[s, w] = $3 } ctb[s, w] = $1; cvb[s, w] = $3 }
            next }
        { t = $1; s = $2; v = $3; last[s] = v
          while (ptr[s] < np[s] && pt[s, ptr[s] + 1] <= t) ptr[s]++
          lag = (ptr[s] ? pv[s, ptr[s]] : 0) - v; if (lag < 0) lag = 0
          if (s == down && t > t2 && !(s in back) && lag <= rate) back[s] = t - t2
          w = win(t)
          if (w >= 0) { if (!((s, w) in ta)) { ta[s, w] = t; va[s, w] = v } tb[s, w] = t; vb[s, w] = v
                        if (lag > ml[s, w]) ml[s, w] = lag } }
        function rate_p(s, w) { return tb[s, w] > ta[s, w] ? (vb[s, w] - va[s, w]) / (tb[s, w] - ta[s, w]) : 0 }
        function rate_c(s, w) { return ctb[s, w] > cta[s, w] ? (cvb[s, w] - cva[s, w]) / (ctb[s, w] - cta[s, w]) : 0 }
        END {
            printf "\nsource\tmode\tpublished_ev_s_before/during/after\tcommitted_ev_s_before/during/after\tpublished_during/before"
            printf "\tmax_lag_events_before/during/after\tcommitted\tpublished\tunpublished_rows\toutbox_rows\n"
            for (i = 0; i < 100; i++) {
                s = "s" i
                if (!(s in c)) continue
                r0 = rate_p(s, 0); r1 = rate_p(s, 1)
                printf "%s%s\t%s\t%.0f/%.0f/%.0f\t%.0f/%.0f/%.0f\t%.2f\t%d/%d/%d\t%d\t%d\t%s\t%d\n", s, s == down ? "*" : "", kind[s],
                    r0, r1, rate_p(s, 2), rate_c(s, 0), rate_c(s, 1), rate_c(s, 2), r0 ? r1 / r0 : 0,
                    ml[s, 0], ml[s, 1], ml[s, 2], c[s], last[s], unpub[s], rows[s]
                if (s != down) { n++; x = r0 ? r1 / r0 : 0; lo = (n == 1 || x < lo) ? x : lo; hi = (n == 1 || x > hi) ? x : hi
                                 if (ml[s, 1] > mlag) mlag = ml[s, 1] }
                tc += c[s]; tp += last[s]; if (last[s] != c[s]) bad++
            }
            printf "(* the source whose database was away. The others, during/before: %.2f-%.2f, most lag during the outage %d events.\n", lo, hi, mlag
            printf " %s was back within %d events of its producer %s s after its database returned. Committed %d, published %d; %d sources published != committed)\n",
                down, rate, (down in back) ? sprintf("%.1f", back[down]) : "NEVER", tc, tp, bad
        }' "$WORK/committed.L" "$WORK/rows.L" "$WORK/produced.L" "$WORK/scrape.L"
    [ -n "$caught" ] || { STUCK_L=1; note "phase L: some source never published all its committed events"; }
    mkdir -p "$WORK/L" && cp "$WORK"/relay.L.log "$WORK"/scrape.L "$WORK"/committed.L "$WORK"/produced.L "$WORK/L/"
}
STUCK_L=0
if [ "$LOAD" != 0 ]; then
    load_phase
    if [ -s "$WORK/problems.log" ] && grep -q '^phase L' "$WORK/problems.log"; then
        note "phase L: warn/error lines in the relay's log (first 20 of $(grep -c '^phase L' "$WORK/problems.log")):"
        grep '^phase L' "$WORK/problems.log" | head -20 | cut -c1-300 >&2
    fi
fi
[ "$STUCK_L" = 0 ] || fail "phase L: a source did not catch up"
STUCK=$(awk -F'\t' 'NR > 1 { s += $11 } END { print s + 0 }' "$WORK/raw.tsv")
[ "$STUCK" = 0 ] || fail "$STUCK sources stuck over all phases (see the warn/error lines above)"
