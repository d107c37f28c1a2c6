#!/bin/bash
# WAL mode failures: a PERMANENT failure and an event past max_attempts end in
# the dead-letter table with their errors (the stream goes on: `run --drain`
# exits 0, the events behind them in their aggregates are published after
# them); `status` shows them; `requeue` sends them back through the outbox
# table and a relay that accepts them publishes them.
ENG_TEST=waldead
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_dead
RELAY="max_attempts = 3; backoff = { initial_ms = 10; max_ms = 50; multiplier = 2.0; jitter = 0.0; };"
write_wal_cfg "$WORK/relay.cfg" "$RELAY" \
    "permanent_event_type = \"order.poison\"; retriable_event_type = \"order.flaky\"; delay_ms = 2;"
write_wal_cfg "$WORK/fixed.cfg" "$RELAY" "delay_ms = 2;"
init_db "$WORK/relay.cfg"
sql "SELECT outbox_enqueue('Order', 'a', 'order.created', '{\"n\": 1}'::jsonb);
     SELECT outbox_enqueue('Order', 'a', 'order.poison', '{\"n\": 2}'::jsonb);
     SELECT outbox_enqueue('Order', 'a', 'order.created', '{\"n\": 3}'::jsonb);
     SELECT outbox_enqueue('Order', 'b', 'order.flaky', '{\"n\": 1}'::jsonb);
     SELECT outbox_enqueue('Order', 'b', 'order.created', '{\"n\": 2}'::jsonb);" >/dev/null
sql "SELECT outbox_emit('Order', 'c', 'order.poison', '{\"n\": 1}'::jsonb)" >/dev/null
enqueue_txns 300 30

drain "$WORK/relay.cfg" "$WORK/relay.log" 120
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 3
expect_eq "permanent errors" "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE dl_error LIKE '%rejected by memory driver%' AND dl_attempts BETWEEN 1 AND 3")" 2
expect_eq "gave up after max_attempts" "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE event_type = 'order.flaky' AND dl_error LIKE 'gave up after 3 attempts%' AND dl_attempts = 3")" 1
expect_eq "emitted event kept whole" "$(sql "SELECT payload->>'n' FROM outbox_dead_letter WHERE aggregate_id = 'c'")" 1
load_record
expect_eq "a's third event published after its second was rejected (last time)" \
    "$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'a' AND status = 'ok'
            AND line > (SELECT max(line) FROM r WHERE aggregate_id = 'a' AND status <> 'ok')")" 1
expect_eq "b's second event published before its first gave up" \
    "$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'b' AND status = 'ok'
            AND line < (SELECT max(line) FROM r WHERE aggregate_id = 'b' AND status <> 'ok')")" 0
expect_eq "ok lines for a and b" "$(sql "SELECT count(*) FROM r WHERE status = 'ok' AND aggregate_id IN ('a', 'b')")" 3
expect_eq "all 300 others published" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok' AND aggregate_id LIKE 'agg-%'")" 300
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.out" || fail "status failed"
grep -qE "^dead: +3$" "$WORK/status.out" || fail "status does not show 3 dead: $(cat "$WORK/status.out")"
"$OBX_BIN" status --json -c "$WORK/relay.cfg" | grep -q '"dead":3' || fail "status --json does not show 3 dead"

DEAD_IDS=$(sql "SELECT string_agg(event_id::text, ' ') FROM outbox_dead_letter")
"$OBX_BIN" requeue --all -c "$WORK/fixed.cfg" >"$WORK/requeue.out" || fail "requeue failed: $(cat "$WORK/requeue.out")"
grep -q "requeued 3 dead events" "$WORK/requeue.out" || fail "requeue: $(cat "$WORK/requeue.out")"
expect_eq "dead letters after requeue" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
drain "$WORK/fixed.cfg" "$WORK/fixed.log" 120
load_record
for id in $DEAD_IDS; do
    expect_eq "ok lines of requeued $id" "$(sql "SELECT count(*) FROM r WHERE event_id = '$id' AND status = 'ok'")" 1
done
check_logs_clean
echo "PASS wal dead_letter: 3 dead-lettered (2 permanent, 1 past max_attempts), requeued and published"
