#!/bin/bash
# WAL mode's throughput and latency beside poll mode and the database's own
# limit, measured one after the other in one session (not a ctest test: run
# by hand on a Release build):
#   OBX_BIN=build-rel/outbox-relay OBX_DRIVERS=build-rel/drivers SVC_DIR=... tests/wal/bench.sh
# - a backlog of BENCH_EVENTS (50,000) events over 1,000 aggregates, in
#   transactions of 500, drained by `run --drain` with the memory driver
#   (ordering none, then aggregate): events/s from the first to the last "ok"
#   line of the broker log; poll mode (2 workers, batch 500) the same way;
# - the simplest claim+mark (one statement per batch of 500, pgbench, 2
#   clients) on the same backlog: the database's limit for a relay that writes
#   per event;
# - commit-to-acknowledgement latency at about 1,000 events/s for 15 s (16
#   events per transaction, a 10 ms sleep between them), WAL mode, ordering
#   aggregate; the rate reached is printed.
ENG_TEST=walbench
. "$(dirname "$0")/wlib.sh"
N=${BENCH_EVENTS:-50000}
ROUNDS=${BENCH_ROUNDS:-2}

# rate LOG: events/s between the first and the last ok line of the record
rate() {
    load_record
    sql "SELECT round(count(DISTINCT event_id) / greatest((max(t_us) - min(t_us)) / 1e6, 1e-3))
         FROM r WHERE status = 'ok'"
}

wal_run() { # ORDERING
    rm -f "$REC"
    fresh_wal_db wal_bench
    write_wal_cfg "$WORK/wal.cfg" "ordering = \"$1\";" ""
    init_db "$WORK/wal.cfg"
    enqueue_txns "$N" 1000 500
    drain "$WORK/wal.cfg" "$WORK/wal.log" 600
    rate
}

poll_run() { # ORDERING
    rm -f "$REC"
    fresh_db wal_bench_poll
    write_cfg "$WORK/poll.cfg" "workers = 2; batch_size = 500; ordering = \"$1\";" ""
    init_db "$WORK/poll.cfg"
    enqueue_txns "$N" 1000 500
    sql "VACUUM ANALYZE outbox"
    drain "$WORK/poll.cfg" "$WORK/poll.log" 600
    rate
}

simplest_run() {
    fresh_db wal_bench_simplest
    write_cfg "$WORK/s.cfg" "" ""
    init_db "$WORK/s.cfg"
    enqueue_txns "$N" 1000 500
    sql "VACUUM ANALYZE outbox"
    cat >"$WORK/simplest.sql" <<'SQL'
WITH c AS (SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 500)
UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1 FROM c WHERE o.id = c.id
RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, o.headers;
SQL
    local tx=$(((N + 999) / 1000)) out tps ntx
    out=$(pgbench -n -M prepared -f "$WORK/simplest.sql" -c 2 -j 2 -t "$tx" "$TEST_DB" 2>&1) || fail "pgbench: $out"
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
    ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
    awk -v n="$N" -v t="$tps" -v x="$ntx" 'BEGIN { printf "%.0f", n * t / x }'
}

for ((k = 1; k <= ROUNDS; k++)); do
    echo "round $k: wal none $(wal_run none) ev/s; wal aggregate $(wal_run aggregate) ev/s;" \
         "poll none $(poll_run none) ev/s; simplest claim+mark $(simplest_run) ev/s"
done

# latency at ~1,000 events/s
rm -f "$REC"
fresh_wal_db wal_bench
write_wal_cfg "$WORK/wal.cfg" "" ""
init_db "$WORK/wal.cfg"
start_relay "$WORK/wal.cfg" "$WORK/lat.log"
wait_log "$WORK/lat.log" "streaming from replication slot" 30
sql "CREATE PROCEDURE load(seconds int) LANGUAGE plpgsql AS \$\$
     DECLARE t0 timestamptz := clock_timestamp(); i int := 0; BEGIN
       WHILE clock_timestamp() < t0 + make_interval(secs => seconds) LOOP
         PERFORM outbox_enqueue('Order', 'agg-' || ((i * 16 + g) % 1000), 'order.created',
                 jsonb_build_object('n', i, 'pad', repeat('x', 150))) FROM generate_series(1, 16) g;
         COMMIT; i := i + 1; PERFORM pg_sleep(0.01);
       END LOOP; END \$\$"
sql "CALL load(15)"
TOTAL=$(sql "SELECT count(*) FROM outbox")
for ((i = 0; i < 300; i++)); do [ "$(ok_events)" -ge "$TOTAL" ] && break; sleep 0.1; done
stop_relay "$RELAY_PID" 30
load_record
echo "latency (commit to ack, WAL mode, ordering aggregate): $TOTAL events in 15 s;" \
     "$(sql "SELECT 'p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, p99 ' ||
                round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, max ' || round(max(ms)::numeric, 1) || ' ms'
            FROM (SELECT (min(r.t_us) - extract(epoch FROM o.created_at) * 1e6) / 1000 AS ms
                  FROM outbox o JOIN r USING (event_id) WHERE r.status = 'ok' GROUP BY o.event_id, o.created_at) x")"
