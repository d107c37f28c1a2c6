#!/bin/bash
# Order through a broker restart with runs in flight (issue 33): the driver
# declares OBX_DRIVER_IN_ORDER, so with ordering "aggregate" the relay sends
# runs of one aggregate's events at once (50 aggregates, 20,000 events: runs
# of about ten per batch). Mosquitto is stopped for 3 s and started again
# while they are in flight. What the lost connection gave back must never be
# sent by paho after the reconnect (a fresh client per connection), else a
# later event of an aggregate reaches the broker before an earlier one the
# relay sends again. msub checks the first deliveries in order per
# aggregate (payload n grows within an aggregate) and counts duplicates;
# every event is published, none dead.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=20000
AGGS=50
mq_private restartorder "" true
fresh_db mqtt_restart_order
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/rorder "max_attempts = 1000;" "reconnect_max_ms = 500;"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null

msub_start restartorder "$PMQ_URL" 'obx/rorder/#' "$N" -P -T 300 -l 3000
mq_relay_start "$CFG"
mq_stop_after "$N" $((N / 4))
sleep 3
bash -c "$PMQ_START" || fail "mosquitto start"

mq_relay_wait
msub_wait
expect_eq "published rows" "$(mq_published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "order violations" "$(msub_field order_violations)" 0
grep -q "connection lost\|server sent DISCONNECT" "$PMQ_DIR/relay.log" || fail "the relay never saw the connection drop"
fresh=$(sed -n 's/.*fresh clients \([0-9]*\).*/\1/p' "$PMQ_DIR/relay.log" | awk '{ s += $1 } END { print s + 0 }')
[ "$fresh" -ge 1 ] || fail "no fresh client after the lost connection"
echo "PASS mqtt_restart_order ($N events over $AGGS aggregates, stopped at $MQ_BEFORE published," \
     "received $(msub_field unique), duplicates $(msub_field duplicates), fresh clients $fresh)"
