#!/bin/bash
# tests/bench/pressure.sh: the relay under pressure, phase after phase in one
# run (issue 33). Producers (pgbench -R RATE transactions/s, 2 clients, 1-5
# outbox_enqueue calls a transaction, 200-byte payloads, 1,000 aggregates) run
# at a FIXED rate below the limit beside the relay, for each source (poll, WAL):
#   0 drain      100,000 events pre-filled with the relay stopped, then the
#                relay started: its drain rate (events/s), the catch-up baseline
#   1 clean      producers alone with the relay
#   2 snapshot   a REPEATABLE READ transaction held across the phase
#                (n_dead_tup of the outbox at the phase end is reported)
#   2b writer    a transaction that took an id (as any write does) held open
#                across the phase
#   3 stall      the broker hangs for the whole phase (the memory driver's
#                hang_file); at its end the producers have stopped, the file is
#                removed: catch-up rate = backlog / time until nothing is pending,
#                and its ratio to phase 0's drain rate
#   4 restart    PostgreSQL restarted (fast shutdown) at the phase start
#   5 after      clean again
# Per phase, commit-to-acknowledgement latency (the first "ok" line's t_us in
# the driver's record file minus the row's created_at): count, p50, p99, max.
# It prints figures and a verdict against the issue's bar; it asserts no timing.
#
#   tests/bench/pressure.sh [--phase SECONDS] [--rate TPS] [--sources poll,wal,cursor] [--out FILE.md]
#
# Defaults: --phase 60, --rate 300, --sources poll,wal, no report file.
# Uses a PRIVATE PostgreSQL (port PRESSURE_PG_PORT, default 56632, in
# /tmp/obx-pressure-PORT, made and removed here) so that restarting it
# disturbs nothing else, and a Release build (OBX_BUILD, default build-bench).
# PRESSURE_FSYNC=on turns fsync on in the private instance.
# PRESSURE_KEEP=1 keeps the work directory (relay logs, pgbench output).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OBX_SRC=${OBX_SRC:-$(cd "$HERE/../.." && pwd)}
OBX_BUILD=${OBX_BUILD:-$OBX_SRC/build-bench}
OBX_BIN=${OBX_BIN:-$OBX_BUILD/outbox-relay}
OBX_DRIVERS=${OBX_DRIVERS:-$OBX_BUILD/drivers}
SERVICES=$OBX_SRC/tests/services/services.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $(date -u +%T) $*" >&2; }

PHASE=60 RATE=300 SOURCES=poll,wal OUT= PREFILL=100000
while [ $# -gt 0 ]; do
    case $1 in
        --phase) PHASE=$2; shift ;;
        --rate) RATE=$2; shift ;;
        --sources) SOURCES=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release)"
command -v pgbench >/dev/null || fail "pgbench missing (package postgresql-client)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

PGF_PORT=${PRESSURE_PG_PORT:-56632}
PGF_DIR=/tmp/obx-pressure-$PGF_PORT
. "$HERE/private_pg.sh"
WORK=$(mktemp -d /tmp/obx-pressure.XXXXXX)
DB=obx_bench_pressure
MPORT=$((20000 + $$ % 20000))
RELAY_PID= SNAP_PID=
cleanup() {
    set +e
    [ -n "$SNAP_PID" ] && kill "$SNAP_PID" 2>/dev/null
    [ -n "$RELAY_PID" ] && kill -TERM "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null
    private_pg_down
    if [ -n "${PRESSURE_KEEP:-}" ]; then echo "kept: $WORK (relay logs, pgbench output)" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
q() { psql -qAt -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# a fresh private instance (wal_level = logical, see services.sh)
private_pg_up
# PRESSURE_FSYNC=on: commits flushed to disk, as in production (the test
# instances run with fsync = off)
if [ "${PRESSURE_FSYNC:-off}" = on ]; then
    psql -qAt -c "ALTER SYSTEM SET fsync = on" -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
fi
[ "$(psql -qAt -c 'SHOW wal_level')" = logical ] || fail "the private PostgreSQL has no wal_level=logical"
PG_VERSION=$(psql -qAt -c "SELECT current_setting('server_version')")
PG_FSYNC=$(psql -qAt -c 'SHOW fsync')
PG_SYNC=$(psql -qAt -c 'SHOW synchronous_commit')

. "$HERE/memory_relay.sh"
cfg() {  # SOURCE
    memory_relay_cfg "$WORK/relay.cfg" "$1" mark "$MPORT" \
        "record_file = \"$WORK/record.jsonl\"; hang_file = \"$WORK/hang\";"
}
cat >"$WORK/produce.sql" <<'SQL'
\set n random(1, 5)
\set a random(0, 999)
SELECT count(outbox_enqueue('Order', 'agg-' || ((:a + g) % 1000), 'order.created',
       jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, :n) g;
SQL

start_relay() {
    "$OBX_BIN" run -c "$WORK/relay.cfg" 2>>"$WORK/relay-$SRC.log" &
    RELAY_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$MPORT/readyz" >/dev/null && break; sleep 0.1; done
}
# wait_caught_up SOURCE: waits (at most 15 minutes) until nothing committed
# before the wait is pending; prints the seconds waited or "-" when the relay
# never caught up
wait_caught_up() {
    local t0 done_sql
    t0=$(now)
    done_sql=$(memory_relay_done_sql "$1" "$(q "SELECT pg_current_wal_lsn()")")
    for _ in $(seq 18000); do
        [ "$(q "$done_sql")" = t ] && { secs "$t0" "$(now)"; return; }
        sleep 0.05
    done
    echo -
}
# producers NAME: pgbench at the fixed rate for PHASE seconds, its window
# (the bench's clock, the same machine as the server's) kept in table phases
producers() {
    local t0 t1
    t0=$(now)
    pgbench -n -f "$WORK/produce.sql" -c 2 -j 2 -R "$RATE" -T "$PHASE" "$DB" >"$WORK/pgbench-$SRC-$1.out" 2>&1 ||
        { cat "$WORK/pgbench-$SRC-$1.out" >&2; fail "pgbench ($1)"; }
    t1=$(now)
    q "INSERT INTO phases VALUES ('$1', to_timestamp($t0), to_timestamp($t1))"
}
dead_tuples() {
    # the relay's and producers' sessions report their statistics within a second
    sleep 1.2
    q "SELECT n_dead_tup || ' (autovacuum runs so far ' || autovacuum_count || ')'
       FROM pg_stat_user_tables WHERE relname = 'outbox'"
}

run_source() {
    SRC=$1
    local t0 drain_s drain_rate t_stall catch_s restart_s lag_max dead
    note "$SRC: fresh database, $PREFILL events pre-filled with the relay stopped"
    psql -qAt -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
    rm -f "$WORK/record.jsonl" "$WORK/hang"
    cfg "$SRC"
    "$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null  # in WAL mode the slot too, before the fill
    q "CREATE TABLE phases (name text PRIMARY KEY, t0 timestamptz, t1 timestamptz)"
    # 25,000 transactions of 4 events (the producers' mean is 3): WAL mode
    # decodes small transactions, as in production, not one huge one
    q "DO \$\$ BEGIN FOR i IN 1..$((PREFILL / 4)) LOOP
         PERFORM outbox_enqueue('Order', 'agg-' || ((i * 4 + g) % 1000), 'order.created',
                 jsonb_build_object('n', g, 'pad', repeat('x', 180))) FROM generate_series(1, 4) g;
         COMMIT; END LOOP; END \$\$"
    q "VACUUM ANALYZE outbox"
    q "CHECKPOINT"

    note "$SRC: phase 0, drain"
    t0=$(now)
    start_relay
    drain_s=$(wait_caught_up "$SRC")
    [ "$drain_s" = - ] && fail "$SRC: the relay did not drain $PREFILL events in 15 minutes"
    # from the relay's start, like the catch-up's from the broker's return
    drain_s=$(secs "$t0" "$(now)")
    drain_rate=$(awk -v n="$PREFILL" -v s="$drain_s" 'BEGIN { printf "%.0f", n / s }')
    q "INSERT INTO phases VALUES ('0 drain', to_timestamp($t0), to_timestamp($(now)))"
    q "UPDATE phases SET t0 = '-infinity' WHERE name = '0 drain'"  # the pre-filled rows belong to it

    note "$SRC: phase 1, clean"
    producers "1 clean"
    echo "1 clean|dead tuples at the end: $(dead_tuples)" >>"$WORK/notes-$SRC"

    note "$SRC: phase 2, snapshot held"
    # the snapshot is taken at the count, before the producers start, and held
    # a little past them, while the dead tuples are read
    psql -qAt -d "$DB" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM outbox" \
        -c "SELECT pg_sleep($PHASE + 3)" -c "COMMIT" >/dev/null &
    SNAP_PID=$!
    sleep 0.2
    producers "2 snapshot"
    dead=$(dead_tuples)
    # pg_stat_activity shows what holds the horizon while the phase ends
    q "SELECT application_name, state, backend_xmin, now() - xact_start FROM pg_stat_activity
       WHERE datname = current_database() AND backend_xmin IS NOT NULL AND pid <> pg_backend_pid()" \
        >"$WORK/horizon-$SRC" 2>&1 || true
    wait "$SNAP_PID" || true
    SNAP_PID=
    echo "2 snapshot|dead tuples at the end: $dead (the snapshot still open); after it: $(dead_tuples)" >>"$WORK/notes-$SRC"

    note "$SRC: phase 2b, a writing transaction held open"
    # it holds a transaction id (any write does): the cursor source's read rule
    # waits for it (README, Cursor mode); claims and the slot do not
    psql -qAt -d "$DB" -c "BEGIN" -c "SELECT pg_current_xact_id()" -c "SELECT pg_sleep($PHASE)" \
        -c "COMMIT" >/dev/null &
    SNAP_PID=$!
    sleep 0.2
    producers "2b writer"
    wait "$SNAP_PID" || true
    SNAP_PID=
    echo "2b writer|dead tuples at the end: $(dead_tuples)" >>"$WORK/notes-$SRC"

    note "$SRC: phase 3, broker stalled"
    : >"$WORK/hang"
    producers "3 stall"
    t_stall=$(now)
    rm -f "$WORK/hang"
    catch_s=$(wait_caught_up "$SRC")
    q "INSERT INTO phases VALUES ('3 catch-up', to_timestamp($t_stall), to_timestamp($(now)))"
    echo "3 stall|dead tuples at the end: $(dead_tuples)" >>"$WORK/notes-$SRC"

    note "$SRC: phase 4, PostgreSQL restarted"
    t0=$(now)
    pgf pg-restart
    restart_s=$(secs "$t0" "$(now)")
    kill -0 "$RELAY_PID" 2>/dev/null || fail "$SRC: the relay exited at the restart ($(tail -3 "$WORK/relay-$SRC.log"))"
    producers "4 restart"
    echo "4 restart|restart (fast) took $restart_s s; dead tuples at the end: $(dead_tuples)" >>"$WORK/notes-$SRC"

    note "$SRC: phase 5, after"
    producers "5 after"
    [ "$(wait_caught_up "$SRC")" = - ] && fail "$SRC: the relay did not finish after phase 5"
    echo "5 after|dead tuples at the end: $(dead_tuples)" >>"$WORK/notes-$SRC"
    kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; RELAY_PID=

    # the record file into the bench database (CSV with control characters as
    # quote and delimiter keeps every JSON byte as it is)
    q "CREATE TABLE rec (j jsonb NOT NULL)"
    psql -qAt -v ON_ERROR_STOP=1 -d "$DB" \
        -c "\\copy rec(j) FROM '$WORK/record.jsonl' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')" >/dev/null
    q "CREATE TABLE first_ok AS SELECT (j->>'event_id')::uuid AS event_id, min((j->>'t_us')::bigint) AS t_us
       FROM rec WHERE j->>'status' = 'ok' GROUP BY 1;
       CREATE TABLE lat AS SELECT o.created_at, (f.t_us - extract(epoch FROM o.created_at) * 1e6) / 1000.0 AS ms
       FROM outbox o LEFT JOIN first_ok f USING (event_id)"
    # backlog at the stall's end: events committed by then and not yet acknowledged
    local backlog catch_rate ratio acks_s
    backlog=$(q "SELECT count(*) FROM outbox o LEFT JOIN first_ok f USING (event_id), phases p
                 WHERE p.name = '3 catch-up' AND o.created_at <= p.t0
                 AND (f.t_us IS NULL OR f.t_us > extract(epoch FROM p.t0) * 1e6)")
    # the same backlog's last acknowledgement (the record), beside the wait above
    # that also counts marking (poll) or confirming (WAL) and its 50 ms polls
    # and its first (the relay resumes at its next probe of the output: up to 2 s)
    acks_s=$(q "SELECT round((min(f.t_us) / 1e6 - max(extract(epoch FROM p.t0)))::numeric, 2) || ' s, its last after '
                || round((max(f.t_us) / 1e6 - max(extract(epoch FROM p.t0)))::numeric, 2)
                FROM outbox o JOIN first_ok f USING (event_id), phases p
                WHERE p.name = '3 catch-up' AND o.created_at <= p.t0 AND f.t_us > extract(epoch FROM p.t0) * 1e6")
    if [ "$catch_s" = - ]; then catch_rate=- ratio=-; else
        catch_rate=$(awk -v n="$backlog" -v s="$catch_s" 'BEGIN { printf "%.0f", n / s }')
        ratio=$(awk -v c="$catch_rate" -v d="$drain_rate" 'BEGIN { printf "%.2f", c / d }')
    fi
    # pgbench -R: "rate limit schedule lag: avg A (max M) ms"
    lag_max=$(cat "$WORK"/pgbench-"$SRC"-*.out | sed -n 's/.*schedule lag: .*(max \([0-9.]*\)).*/\1/p' | sort -n | tail -1)

    {
        echo "### Source: $SRC"
        echo
        echo "| phase | events | acked | events/s | p50 ms | p99 ms | max ms | notes |"
        echo "|---|---:|---:|---:|---:|---:|---:|---|"
        q "SELECT p.name, count(l.*), count(l.ms),
                  round(count(l.*) / greatest(extract(epoch FROM p.t1 - greatest(p.t0, (SELECT min(created_at) FROM outbox))), 0.001)),
                  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ms)::numeric, 1),
                  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l.ms)::numeric, 1),
                  round(max(l.ms)::numeric, 1)
           FROM phases p LEFT JOIN lat l ON l.created_at >= p.t0 AND l.created_at < p.t1
           WHERE p.name <> '3 catch-up' GROUP BY p.name, p.t0, p.t1 ORDER BY p.name" |
        while IFS='|' read -r name n acked rate p50 p99 mx; do
            note_txt=$(awk -F'|' -v k="$name" '$1 == k { print $2 }' "$WORK/notes-$SRC" 2>/dev/null)
            # the pre-filled rows waited for the relay's start: their latency says nothing
            [ "$name" = "0 drain" ] && { rate=$drain_rate p50=- p99=- mx=-
                note_txt="relay started on $PREFILL pre-filled events: drained in $drain_s s (baseline rate)"; }
            [ "$name" = "3 stall" ] && note_txt="$note_txt; backlog at its end $backlog, caught up in $catch_s s (its first ack after $acks_s s) = $catch_rate events/s = **$ratio** of the drain rate"
            echo "| $name | $n | $acked | $rate | $p50 | $p99 | $mx | $note_txt |"
        done
        echo
        echo "pgbench's largest schedule lag over the phases: ${lag_max:-?} ms (producers kept to the fixed rate when small)."
        echo
        q "SELECT p99 FROM (SELECT p.name, percentile_cont(0.99) WITHIN GROUP (ORDER BY l.ms) AS p99
           FROM phases p JOIN lat l ON l.created_at >= p.t0 AND l.created_at < p.t1
           WHERE p.name IN ('1 clean', '2 snapshot') GROUP BY p.name) x ORDER BY name" | paste -sd' ' >"$WORK/p99"
        read -r p99c p99s <"$WORK/p99"
        awk -v c="$p99c" -v s="$p99s" -v r="$ratio" 'BEGIN {
            printf "Bar: snapshot p99 %.1f ms vs 2 x clean p99 %.1f ms: %s; catch-up %s of the drain rate (>= 0.9): %s.\n",
                s, 2 * c, (s <= 2 * c ? "**met**" : "**not met**"), r, (r != "-" && r >= 0.9 ? "**met**" : "**not met**") }'
        echo
        if [ -s "$WORK/horizon-$SRC" ]; then
            echo "Sessions holding a snapshot (backend_xmin) at the end of phase 2: application, state, xmin, transaction age:"
            echo
            sed 's/^/    /' "$WORK/horizon-$SRC"
            echo
        fi
    } >"$WORK/table-$SRC.md"
    cat "$WORK/table-$SRC.md"
    grep -cE ' (error|warn) ' "$WORK/relay-$SRC.log" >"$WORK/logcount-$SRC" || true
}

IFS=, read -r -a SRCS <<<"$SOURCES"
note "pressure: $PHASE s phases, producers pgbench -R $RATE -c 2, sources $SOURCES, PostgreSQL $PG_VERSION (private, fsync=$PG_FSYNC)"
for s in "${SRCS[@]}"; do
    case $s in poll|wal|cursor) run_source "$s" ;; *) fail "unknown source $s" ;; esac
done

if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    {
        echo "# Pressure phases in one run (issue 33)"
        echo
        echo "\`tests/bench/pressure.sh --phase $PHASE --rate $RATE --sources $SOURCES\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
        echo "commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), Release build."
        echo
        echo "- Machine: $(nproc) cores, load average before the run $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "  (other work may share the machine)."
        echo "- PostgreSQL $PG_VERSION, a private instance: fsync = $PG_FSYNC, synchronous_commit = $PG_SYNC"
        echo "  (the instance's own settings: with fsync off a commit costs no disk flush)."
        echo "- Producers: pgbench -R $RATE -c 2 -j 2 -T $PHASE per phase, 1-5 outbox_enqueue a transaction"
        echo "  (about $((RATE * 3)) events/s), 200-byte payloads, 1,000 aggregates."
        echo "- Relay: memory driver (record_file, hang_file), workers 2, batch 500, ordering aggregate,"
        echo "  retention mark; WAL mode: source wal with a slot. Phase 0: $PREFILL events pre-filled."
        echo "- Latency: first \"ok\" record line's t_us minus the row's created_at (transaction start),"
        echo "  phases by created_at; events/s = events / phase window. The bar: under a held snapshot"
        echo "  p99 at most twice the clean phase's; catch-up after the stall >= 0.9 of the drain rate."
        echo
        for s in "${SRCS[@]}"; do cat "$WORK/table-$s.md"; done
    } >"$OUT"
    note "written to $OUT"
fi
