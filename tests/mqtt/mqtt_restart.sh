#!/bin/bash
# Mosquitto stopped and started again while the relay publishes: nothing is
# lost (every event published, none dead, the subscriber gets them all), the
# relay recovers without intervention, duplicates are counted and printed.
# The broker keeps sessions on disk (MQ_PERSIST) and the subscriber uses a
# persistent session (clean start false + session expiry), so events the
# broker acknowledged before the stop still reach it afterwards.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=${MQTT_RESTART_EVENTS:-30000}
AGGS=2000
mq_private restart "" true
fresh_db mqtt_restart
CFG=$PMQ_DIR/relay.cfg
# attempts are spent while the broker is down: allow plenty, nothing may die
mq_relay_cfg "$CFG" "$PMQ_URL" obx/restart "max_attempts = 1000;" "reconnect_max_ms = 500;"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g), jsonb_build_object('tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null

msub_start restart "$PMQ_URL" 'obx/restart/#' "$N" -P -H tenant=acme -T 300 -l 3000 -o "$PMQ_DIR/received.ids"
mq_relay_start "$CFG"
mq_stop_after "$N" $((N / 4))
sleep 3
during=$(mq_published)
note "starting mosquitto again ($during published while it was down)"
bash -c "$PMQ_START" || fail "mosquitto start"

mq_relay_wait
rc=0
wait "$MSUB_PID" || rc=$?
cat "$MSUB_OUT"
if [ "$rc" -ne 0 ]; then
    # which published events never arrived, and when they were marked
    sql "CREATE TABLE received(id uuid); COPY received FROM '$PMQ_DIR/received.ids'" >/dev/null 2>&1 || true
    sql "SELECT 'missing: ' || count(*) || ' published between ' || min(published_at) || ' and ' || max(published_at)
         FROM outbox o WHERE NOT EXISTS (SELECT FROM received r WHERE r.id = o.event_id)" >&2 || true
    fail "subscriber did not get every published event"
fi

expect_eq "published rows" "$(mq_published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
retried=$(sql "SELECT count(*) FROM outbox WHERE attempts > 1")
grep -q "connection lost\|server sent DISCONNECT" "$PMQ_DIR/relay.log" || fail "the relay never saw the connection drop"
grep -q "after [0-9]* attempt" "$PMQ_DIR/relay.log" || fail "the relay never reconnected"
echo "restart: $N published, $(msub_field unique) received, $(msub_field duplicates) duplicates," \
     "$retried events needed more than one attempt, subscriber reconnects $(msub_field reconnects)"
echo "PASS mqtt_restart"
