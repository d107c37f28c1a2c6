#!/bin/bash
# Through the relay: an event routed to an exchange with no matching binding
# (basic.return NO_ROUTE) and one to a missing exchange (NOT_FOUND) are
# dead-lettered at once with the broker's text in last_error; every event
# around them, including later events of the same aggregates, is delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
Q=$(rmq_queue e2e_unroutable)
rmq_delete_at_exit "$Q"
# the exchange is shared by every run on the broker: the routing keys are this run's
X=obx_unroutable_x
fresh_db rmq_e2e_unroutable
write_relay_cfg "$WORK/relay.cfg" "$AMQP_URL" "$X/orders.$$.\${event_type}" \
    "declare_exchange = \"$X\"; declare_queue = \"$Q\"; bind_routing_key = \"orders.$$.#\";"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

enqueue_events 500 10
# per-row destination overrides: a binding nobody made, an exchange nobody declared
sql "SELECT outbox_enqueue('Order', 'agg-3', 'order.created', '{\"n\": 900001}', '{}', 'amq.topic/nobody.listens')" >/dev/null
sql "SELECT outbox_enqueue('Order', 'agg-4', 'order.created', '{\"n\": 900002}', '{}', 'obx_missing_exchange/x')" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 10), 'order.created',
         jsonb_build_object('n', g), jsonb_build_object('seq', g::text))) FROM generate_series(501, 1000) g" >/dev/null

timeout 300 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 1000
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 2
sql "SELECT aggregate_id, attempts, last_error FROM outbox WHERE dead_at IS NOT NULL ORDER BY id"
e1=$(sql "SELECT last_error FROM outbox WHERE payload->>'n' = '900001'")
e2=$(sql "SELECT last_error FROM outbox WHERE payload->>'n' = '900002'")
grep -q "NO_ROUTE (exchange 'amq.topic', routing key 'nobody.listens')" <<<"$e1" || fail "NO_ROUTE not in last_error: $e1"
grep -q "NOT_FOUND - no exchange 'obx_missing_exchange'" <<<"$e2" || fail "NOT_FOUND not in last_error: $e2"
expect_eq "attempts of the dead rows" "$(sql "SELECT string_agg(attempts::text, ',') FROM outbox WHERE dead_at IS NOT NULL")" "1,1"

r=$("$RCONSUME" "$AMQP_URL" read "$Q" 1000 10000 --header-n seq "" --content-type application/json) \
    || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
echo "PASS rmq_e2e_unroutable"
