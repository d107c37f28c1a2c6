#!/bin/bash
# on_dead = "block" with a dead head that keeps receiving events (issue 11).
# Aggregate A's head is rejected permanently (dead); A has 200 events behind
# it, and while the relay runs, 20 transactions each add 5 more events of A
# and 50 events of 100 other aggregates. All 1,000 events of the other
# aggregates are published; A's 300 stay pending, never attempted (attempts
# 0, no line in the broker log). `requeue --all` with a config that no longer
# rejects the event type releases them, and they are published in id order.
ENG_TEST=fair_block
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_fair_block
write_cfg "$WORK/block.cfg" "workers = 2; batch_size = 10; on_dead = \"block\";" \
    "permanent_event_type = \"order.poison\";"
write_cfg "$WORK/fixed.cfg" "workers = 2; batch_size = 10; on_dead = \"block\";" ""
init_db "$WORK/block.cfg"
sql "SELECT outbox_enqueue('Order', 'A', 'order.poison', '{}')" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 200) g" >/dev/null
sql "ANALYZE outbox"

start_relay "$WORK/block.cfg" "$WORK/block.log"
PID=$RELAY_PID
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'A' AND dead_at IS NOT NULL" 1 60
for round in $(seq 1 20); do
    sql "BEGIN;
         SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('round', $round, 'n', g)))
         FROM generate_series(1, 5) g;
         SELECT count(outbox_enqueue('Order', 'o-' || (g % 100), 'order.created', jsonb_build_object('round', $round, 'n', g)))
         FROM generate_series(1, 50) g;
         COMMIT" >/dev/null
done
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_id <> 'A' AND published_at IS NOT NULL" 1000 180
stop_relay "$PID" 30

load_record
expect_eq "A: state by id (dead head, then held)" \
    "$(sql "SELECT string_agg(DISTINCT CASE WHEN published_at IS NOT NULL THEN 'pub' WHEN dead_at IS NOT NULL THEN 'dead'
            ELSE 'pending' END || '/' || attempts, ',') FROM outbox WHERE aggregate_id = 'A' AND id > (SELECT min(id)
            FROM outbox WHERE aggregate_id = 'A')")" "pending/0"
expect_eq "A's held rows" "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'A' AND dead_at IS NULL")" 300
expect_eq "A's head" "$(sql "SELECT event_type || '/' || (dead_at IS NOT NULL) FROM outbox WHERE aggregate_id = 'A'
                             ORDER BY id LIMIT 1")" "order.poison/true"
expect_eq "broker log lines for A" \
    "$(sql "SELECT string_agg(r.status, ',') FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'A'")" "permanent"
expect_eq "status while blocked" \
    "$("$OBX_BIN" status -c "$WORK/block.cfg" --json | sed 's/,"oldest_pending_seconds".*$/}/')" \
    '{"pending":300,"in_flight":0,"dead":1}'

OUT=$("$OBX_BIN" requeue -c "$WORK/fixed.cfg" --all) || fail "requeue --all failed"
expect_eq "requeue --all" "$OUT" "requeued 1 dead events"
drain "$WORK/fixed.cfg" "$WORK/fixed.log" 120
load_record
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
expect_eq "A published in id order after requeue" \
    "$(sql "SELECT string_agg(o.id::text, ',' ORDER BY f) = string_agg(o.id::text, ',' ORDER BY o.id)
            FROM outbox o JOIN (SELECT event_id, min(line) f FROM r WHERE status = 'ok' GROUP BY event_id) x
            USING (event_id) WHERE o.aggregate_id = 'A'")" t
check_logs_clean
echo "PASS fair_block"
