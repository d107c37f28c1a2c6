#!/bin/bash
# Per-aggregate ordering.
# 1. Four workers in two processes (2 + 2), 1,000 aggregates x 10 events, the
#    memory driver failing 5% of publishes RETRIABLE at random. Both processes
#    append to one broker log (O_APPEND), so its line order is the order of
#    publication. In the order of first "ok", every aggregate's events are in
#    id order; stronger: no attempt of event N+1 (any outcome) is made before
#    event N's first "ok" (one event per aggregate in flight anywhere).
# 2. A failing aggregate holds back only itself: with on_dead = block, one
#    aggregate's second event is rejected permanently; `run --drain` still
#    exits once only that aggregate's rows remain, every other aggregate is
#    fully published, the blocked rows were never attempted and `status` shows
#    them pending. `requeue --all` with a config that accepts the event type
#    releases the aggregate, which is then published in order.
ENG_TEST=ordering
. "$(dirname "$0")/engine_lib.sh"

# --- 1
fresh_db eng_ordering
RELAY_OPTS="batch_size = 200; lease_seconds = 30; max_attempts = 100;
    backoff = { initial_ms = 20; max_ms = 200; multiplier = 2.0; jitter = 0.2; };"
write_cfg "$WORK/a.cfg" "workers = 2; $RELAY_OPTS" "retriable_rate = 0.05; delay_ms = 3;"
write_cfg "$WORK/b.cfg" "workers = 2; $RELAY_OPTS" "retriable_rate = 0.05; delay_ms = 3; threaded = true;"
init_db "$WORK/a.cfg"
enqueue_bulk 10000 1000
sql "ANALYZE outbox"
start_two_relays "$WORK/a.cfg" "$WORK/a.log" "$WORK/b.cfg" "$WORK/b.log"
wait_exit "$PID_A" 170
[ "$EXIT_RC" -eq 0 ] || fail "relay A exited $EXIT_RC"
wait_exit "$PID_B" 170
[ "$EXIT_RC" -eq 0 ] || fail "relay B exited $EXIT_RC"
load_record
check_all_published
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
RETRIES=$(sql "SELECT count(*) FROM r WHERE status = 'retriable'")
[ "$RETRIES" -ge 100 ] || fail "only $RETRIES retriable failures: the test did not exercise retries"
expect_eq "processes that published" "$(sql "SELECT count(DISTINCT pid) FROM r WHERE status = 'ok'")" 2
check_order
echo "ordering 1: 10000 events, 1000 aggregates, $RETRIES retriable failures," \
     "failing aggregates: $(sql "SELECT count(DISTINCT aggregate_id) FROM r WHERE status = 'retriable'")," \
     "duplicates: $(dup_count)"

# --- 2
fresh_db eng_ordering_block
rm -f "$REC"
write_cfg "$WORK/block.cfg" "workers = 2; batch_size = 100; on_dead = \"block\";" \
    "permanent_event_type = \"order.poison\";"
write_cfg "$WORK/fixed.cfg" "workers = 2; batch_size = 100; on_dead = \"block\";" ""
init_db "$WORK/block.cfg"
# the blocked aggregate's events are spread among 200 other aggregates' events
sql "SELECT count(outbox_enqueue('Order', CASE WHEN g % 200 = 7 THEN 'blocked' ELSE 'agg-' || (g % 199) END,
            CASE WHEN g = 207 THEN 'order.poison' ELSE 'order.created' END, jsonb_build_object('n', g)))
     FROM generate_series(1, 1000) g" >/dev/null
expect_eq "blocked aggregate's events" "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'blocked'")" 5
drain "$WORK/block.cfg" "$WORK/block.log" 120
load_record
expect_eq "unpublished rows of other aggregates" \
    "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id <> 'blocked' AND published_at IS NULL")" 0
expect_eq "blocked aggregate: state by id" \
    "$(sql "SELECT string_agg(CASE WHEN published_at IS NOT NULL THEN 'pub' WHEN dead_at IS NOT NULL THEN 'dead'
            ELSE 'pending' END, ',' ORDER BY id) FROM outbox WHERE aggregate_id = 'blocked'")" \
    "pub,dead,pending,pending,pending"
expect_eq "record lines for the held rows" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'blocked'
            AND o.published_at IS NULL AND o.dead_at IS NULL")" 0
expect_eq "status while blocked" \
    "$("$OBX_BIN" status -c "$WORK/block.cfg" --json | sed 's/,"oldest_pending_seconds".*$/}/')" \
    '{"pending":3,"in_flight":0,"dead":1}'
OUT=$("$OBX_BIN" requeue -c "$WORK/fixed.cfg" --all) || fail "requeue --all failed"
expect_eq "requeue --all" "$OUT" "requeued 1 dead events"
drain "$WORK/fixed.cfg" "$WORK/fixed.log" 120
load_record
check_all_published
expect_eq "blocked aggregate published in id order after requeue" \
    "$(sql "SELECT string_agg(o.id::text, ',' ORDER BY f) = string_agg(o.id::text, ',' ORDER BY o.id)
            FROM outbox o JOIN (SELECT event_id, min(line) f FROM r WHERE status = 'ok' GROUP BY event_id) x
            USING (event_id) WHERE o.aggregate_id = 'blocked'")" t
check_logs_clean
echo "PASS ordering"
