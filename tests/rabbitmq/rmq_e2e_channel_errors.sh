#!/bin/bash
# Through the relay, a channel-level error is one event's (issue 34: one
# refused exchange stopped the whole output, 102 reconnects; a payload over
# max_message_size stayed pending forever, 105 reconnects, 2,793 messages
# queued for 1,001 rows). On a PRIVATE RabbitMQ with max_message_size =
# 65536 and no write permission on one exchange, 1,002 events: 1,000 normal
# ones, one routed to the refused exchange and one of 100 KB. The 1,000 are
# published, in order per aggregate; the two are dead-lettered with the
# broker's reason; fewer than 1,000 extra messages in the queue; no
# reconnect (the count is printed).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_make_conf 'max_message_size = 65536'
priv_start
priv rabbitmqctl -q set_permissions -p / guest '.*' '^(?!obx_refused_x$).*' '.*'
Q=$(rmq_queue e2e_chanerr)
X=obx_chanerr_x
"$RCONSUME" "$PRIV_URL" declare "$Q" "$X" "orders.#"
"$RCONSUME" "$PRIV_URL" declare "${Q}_refused" obx_refused_x "#"
fresh_db rmq_e2e_channel_errors
write_relay_cfg "$WORK/relay.cfg" "$PRIV_URL" "$X/orders.created" "" 3
sed -i 's|^routes = (|routes = (\n  { event_type = "order.refused"; aggregate_type = "*"; output = "rabbit"; destination = "obx_refused_x/orders.created"; },|' \
    "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

# n 1..1000 over 7 aggregates; the refused one after n=300, the big one after n=600
enqueue_range() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 7), 'order.created',
             jsonb_build_object('n', g), jsonb_build_object('seq', g::text)))
         FROM generate_series($1, $2) g" >/dev/null
}
enqueue_range 1 300
sql "SELECT outbox_enqueue('Order', 'agg-refused', 'order.refused', '{\"n\": 0}'::jsonb)" >/dev/null
enqueue_range 301 600
sql "SELECT outbox_enqueue('Order', 'agg-big', 'order.created',
         jsonb_build_object('n', 0, 'pad', repeat('x', 100000)))" >/dev/null
enqueue_range 601 1000

timeout 120 "$OBX_BIN" run --drain -c "$WORK/relay.cfg" 2>"$WORK/relay.log" \
    || { tail -20 "$WORK/relay.log" >&2; fail "the relay did not drain"; }
reconnects=$(grep -c "reconnecting" "$WORK/relay.log" || true)
closes=$(grep -c "opening it again" "$WORK/relay.log" || true)
echo "reconnects=$reconnects channel closes=$closes"
expect_eq "published rows" "$(published_count)" 1000
sql "SELECT aggregate_id, attempts, last_error FROM outbox WHERE dead_at IS NOT NULL ORDER BY id"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 2
sql "SELECT last_error FROM outbox WHERE aggregate_id = 'agg-refused' AND dead_at IS NOT NULL" |
    grep -q "ACCESS_REFUSED - access to exchange 'obx_refused_x' in vhost '/' refused" \
    || fail "the refused event is not dead with ACCESS_REFUSED"
sql "SELECT last_error FROM outbox WHERE aggregate_id = 'agg-big' AND dead_at IS NOT NULL" |
    grep -q "PRECONDITION_FAILED - message size .* is larger than configured max size 65536" \
    || fail "the 100 KB event is not dead with PRECONDITION_FAILED"
expect_eq reconnects "$reconnects" 0

r=$("$RCONSUME" "$PRIV_URL" read "$Q" 1000 5000 --header-n seq "") || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
extra=$(($(field received "$r") - $(field unique "$r")))
[ "$extra" -lt 1000 ] || fail "$extra extra messages in the queue"
echo "PASS rmq_e2e_channel_errors (dead 2, reconnects $reconnects, channel closes $closes, $extra extra messages)"
