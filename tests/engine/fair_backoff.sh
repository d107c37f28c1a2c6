#!/bin/bash
# A head backing off does not delay other aggregates (issue 11). Aggregate
# A's head fails retriable on every attempt (memory driver
# retriable_event_type) with a 60 s backoff. Once it is backing off, A keeps
# receiving events: 200 at once, then 20 transactions of 5 events of A and
# 50 events of 100 other aggregates each (so rows of A that are due, behind
# the waiting head, always come before the others by id). The relay runs
# until the other aggregates' 1,000 events are all published; then A's head
# has still been attempted only once and its retry is still in the future
# (so they were published while it waited), and nothing else of A was tried.
ENG_TEST=fair_backoff
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_fair_backoff
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 10; max_attempts = 10;
    backoff = { initial_ms = 60000; max_ms = 60000; multiplier = 2.0; jitter = 0.0; };" \
    "retriable_event_type = \"order.flaky\";"
init_db "$WORK/relay.cfg"
sql "SELECT outbox_enqueue('Order', 'A', 'order.flaky', '{}')" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 200) g" >/dev/null
sql "ANALYZE outbox"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
wait_sql "SELECT attempts FROM outbox WHERE event_type = 'order.flaky'" 1 60
sql "SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('late', g)))
     FROM generate_series(1, 200) g" >/dev/null
for round in $(seq 1 20); do
    sql "BEGIN;
         SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('round', $round, 'n', g)))
         FROM generate_series(1, 5) g;
         SELECT count(outbox_enqueue('Order', 'o-' || (g % 100), 'order.created', jsonb_build_object('round', $round, 'n', g)))
         FROM generate_series(1, 50) g;
         COMMIT" >/dev/null
done
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_id <> 'A' AND published_at IS NOT NULL" 1000 120
HEAD=$(sql "SELECT attempts || '/' || (available_at > now()) || '/' || (dead_at IS NULL AND published_at IS NULL)
            FROM outbox WHERE aggregate_id = 'A' ORDER BY id LIMIT 1")
WAIT_S=$(sql "SELECT round(extract(epoch FROM available_at - now())) FROM outbox WHERE aggregate_id = 'A' ORDER BY id LIMIT 1")
stop_relay "$PID" 30
note "all 1000 other events published; A's head retries in $WAIT_S s"
expect_eq "A's head when the others are published: attempts/retry in the future/pending" "$HEAD" "1/true/true"
expect_eq "A's other events attempted" \
    "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'A' AND event_type <> 'order.flaky'
            AND (attempts > 0 OR published_at IS NOT NULL OR dead_at IS NOT NULL)")" 0
load_record
expect_eq "broker log lines for A" \
    "$(sql "SELECT string_agg(r.status, ',') FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'A'")" "retriable"
expect_eq "ok lines per other event" \
    "$(sql "SELECT string_agg(DISTINCT n::text, ',') FROM (SELECT count(r.line) n FROM outbox o LEFT JOIN r
            ON r.event_id = o.event_id AND r.status = 'ok' WHERE o.aggregate_id <> 'A' GROUP BY o.id) x")" 1
check_partitions_used
check_logs_clean
echo "PASS fair_backoff"
