#!/bin/bash
# tests/bench/partition_retention.sh: what retention costs the database, on
# the same events three ways. N events (default 100,000; 1,000 aggregates)
# drained by `run --drain` into the memory driver (2 workers, batch 500,
# ordering aggregate), then their history removed:
#   mark       plain outbox, rows marked, then deleted by the cleanup's own
#              statement (1,000 rows a statement, SKIP LOCKED) until none is left
#   delete     plain outbox, retention = "delete": each row deleted when recorded
#   partition  relay.partitions, rows marked in an hour-old partition, then
#              the partition retired as the relay's cleanup does it
#              (outbox_partition_retire, DETACH CONCURRENTLY, DROP)
# Prints per mode: drain time and events/s, WAL bytes written during the
# drain and during the retention step (pg_current_wal_lsn; the server's, so
# other sessions' writes count too), its time, and the outbox's dead tuples
# left (pg_stat_user_tables, autovacuum off on the outbox so they stay
# countable), then the work autovacuum would do for them, done by a VACUUM:
# its time and WAL; and per million events, all WAL and the VACUUM time.
# Timings are printed, never asserted.
#
#   tests/bench/partition_retention.sh [--events N] [--rounds N] [--out FILE.md]
#
# Needs the shared services and a build (OBX_BUILD, default build-rel:
# outbox-relay and the memory driver). Databases: part_bench_* only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OBX_SRC=${OBX_SRC:-$(cd "$HERE/../.." && pwd)}
OBX_BUILD=$(cd "${OBX_BUILD:-$OBX_SRC/build-rel}" && pwd)
export OBX_BIN=${OBX_BIN:-$OBX_BUILD/outbox-relay}
export OBX_DRIVERS=${OBX_DRIVERS:-$OBX_BUILD/drivers}
export PGOPTIONS="-c client_min_messages=warning"
. "$OBX_SRC/tests/lib.sh"
EVENTS=100000 ROUNDS=1 OUT=""
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
WORK=$(mktemp -d /tmp/obx-partbench.XXXXXX)
DB=part_bench_$$
cleanup() {
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

cfg() { # FILE RELAY_SETTINGS
    cat >"$1" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; drivers_dir = "$OBX_DRIVERS"; $2 };
log = { level = "error"; };
outputs = ( { name = "mem"; driver = "memory"; } );
CFG
}
cfg "$WORK/mark.cfg" 'retention = "mark";'
cfg "$WORK/delete.cfg" 'retention = "delete";'
cfg "$WORK/partition.cfg" 'partitions = { interval = "1 hour"; ahead = 1; keep = "1 hour"; };'

lsn() { psql -qAt -d "$DB" -c "SELECT pg_current_wal_lsn()"; }
wal_since() { psql -qAt -d "$DB" -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$1')::bigint"; }
ms() { date +%s%3N; }
# the outbox's dead tuples, partitions included, once the statistics are flushed
dead_tuples() {
    sleep 1.5
    psql -qAt -d "$DB" -c "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relid = 'outbox'::regclass
        OR relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'outbox'::regclass)"
}

# one_run MODE: prints "mode drain_ms events_per_s drain_wal retention_ms retention_wal dead
# vacuum_ms vacuum_wal"
one_run() {
    local mode=$1 start t0 drain_ms drain_wal ret_ms ret_wal created="clock_timestamp()"
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
    "$OBX_BIN" init-db -c "$WORK/$mode.cfg" >/dev/null
    if [ "$mode" = partition ]; then
        # an hour-old partition the rows go to, so retention may take it at once
        psql -qAt -d "$DB" -c "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()) - interval '2 hours'; BEGIN
            EXECUTE format('CREATE TABLE outbox_old PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)
              WITH (autovacuum_enabled = false)', h, h + interval '1 hour'); END \$\$" >/dev/null
        created="date_trunc('hour', now()) - interval '2 hours' + interval '1 minute'"
    else
        psql -qAt -d "$DB" -c "ALTER TABLE outbox SET (autovacuum_enabled = false)" >/dev/null
    fi
    psql -qAt -d "$DB" -c "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
        SELECT 'Order', 'agg-' || (g % 1000), 'order.created', jsonb_build_object('n', g, 'pad', repeat('x', 150)), $created
        FROM generate_series(1, $EVENTS) g ORDER BY g" >/dev/null
    psql -qAt -d "$DB" -c "VACUUM ANALYZE outbox" -c "CHECKPOINT" >/dev/null
    start=$(lsn)
    t0=$(ms)
    "$OBX_BIN" run -c "$WORK/$mode.cfg" --drain 2>"$WORK/$mode.log" || fail "drain ($mode): $(tail -3 "$WORK/$mode.log")"
    drain_ms=$(($(ms) - t0))
    drain_wal=$(wal_since "$start")
    [ "$(psql -qAt -d "$DB" -c "SELECT count(*) FROM outbox WHERE published_at IS NULL")" = 0 ] || fail "$mode: rows left unpublished"
    start=$(lsn)
    t0=$(ms)
    case $mode in
        mark)
            # the cleanup thread's statement, with the horizon at now
            local n=1000
            while [ "$n" -ge 1000 ]; do
                n=$(psql -qAt -d "$DB" -c "WITH d AS (DELETE FROM outbox WHERE id IN (SELECT id FROM outbox
                      WHERE published_at < now() LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING 1) SELECT count(*) FROM d")
            done ;;
        delete) ;;
        partition)
            local part outcome
            IFS='|' read -r part outcome < <(psql -qAt -d "$DB" -c "SELECT part, outcome FROM outbox_partition_retire('public', 'outbox', '1 hour', NULL)")
            [ "$outcome" = detach ] || fail "partition: retire said '$outcome' for '$part'"
            psql -qAt -d "$DB" -c "ALTER TABLE outbox DETACH PARTITION $part CONCURRENTLY" >/dev/null
            psql -qAt -d "$DB" -c "DROP TABLE $part" >/dev/null ;;
    esac
    ret_ms=$(($(ms) - t0))
    ret_wal=$(wal_since "$start")
    [ "$(psql -qAt -d "$DB" -c "SELECT count(*) FROM outbox")" = 0 ] || fail "$mode: rows left after retention"
    local dead vac_ms vac_wal
    dead=$(dead_tuples)
    # the work left for autovacuum, done now: its time and WAL
    start=$(lsn)
    t0=$(ms)
    psql -qAt -d "$DB" -c "VACUUM outbox" >/dev/null
    vac_ms=$(($(ms) - t0))
    vac_wal=$(wal_since "$start")
    echo "$mode $drain_ms $((EVENTS * 1000 / drain_ms)) $drain_wal $ret_ms $ret_wal $dead $vac_ms $vac_wal"
}

results=$WORK/results.txt
for ((r = 1; r <= ROUNDS; r++)); do
    for mode in mark delete partition; do
        one_run "$mode" | tee -a "$results" >&2
    done
done
table=$(
    echo "| mode | drain ms | events/s | drain WAL MB | retention ms | retention WAL MB | dead tuples left | VACUUM ms | VACUUM WAL MB | per 1M events: WAL MB, VACUUM s |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    awk -v n="$EVENTS" '{ m = 1000000 / n
        printf "| %s | %d | %d | %.1f | %d | %.2f | %d | %d | %.2f | %.0f, %.1f |\n", $1, $2, $3, $4 / 1048576, $5, $6 / 1048576, $7,
            $8, $9 / 1048576, ($4 + $6 + $9) / 1048576 * m, $8 / 1000 * m }' "$results"
)
echo "$table"
if [ -n "$OUT" ]; then
    {
        echo "# Retention: mark vs delete vs partition drop"
        echo
        echo "$EVENTS events, 1,000 aggregates, 2 workers, batch 500, ordering aggregate, memory driver;"
        echo "$ROUNDS round(s); $(date -u +%Y-%m-%d), $(nproc) cores shared with other work,"
        echo "PostgreSQL $(psql -qAt -d postgres -c 'SHOW server_version'). WAL is the server's (other"
        echo "sessions' writes count too); autovacuum off on the outbox. tests/bench/partition_retention.sh."
        echo
        echo "$table"
    } >"$OUT"
fi
