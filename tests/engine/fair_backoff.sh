#!/bin/bash
# A head backing off does not delay other aggregates (issue 11). Aggregate
# A's head fails retriable on every attempt (memory driver
# retriable_event_type) with a 60 s backoff; 200 more events of A are behind
# it, and 1,000 events of 100 other aggregates were committed after all of A.
# The relay runs until the other aggregates are all published; then A's head
# has still been attempted only once and its retry is still in the future
# (so they were published while it waited), and nothing else of A was tried.
ENG_TEST=fair_backoff
. "$(dirname "$0")/elib.sh"

fresh_db eng_fair_backoff
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 10; max_attempts = 10;
    backoff = { initial_ms = 60000; max_ms = 60000; multiplier = 2.0; jitter = 0.0; };" \
    "retriable_event_type = \"order.flaky\";"
init_db "$WORK/relay.cfg"
sql "SELECT outbox_enqueue('Order', 'A', 'order.flaky', '{}')" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 200) g" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'o-' || (g % 100), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 1000) g" >/dev/null
sql "ANALYZE outbox"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
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
check_logs_clean
echo "PASS fair_backoff"
