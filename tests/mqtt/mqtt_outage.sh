#!/bin/bash
# A broker outage through MQTT_DRIVER costs no attempt (mqtt_lib.sh;
# mqtt_outage and mosq_outage): Mosquitto is stopped for longer than
# max_attempts x backoff while the relay publishes. Before ABI 1.1 every
# pending event would have been dead-lettered; now the output is paused and
# probed, and afterwards every event is published with attempts = 1, none
# dead, the subscriber (a persistent session on a broker that keeps it on
# disk) gets them all, each aggregate in order, the log says once per outage
# that the output went down and came back, and that the driver saw the
# connection drop and reconnected.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=6000
AGGS=500
mq_private outage "" true
fresh_db "${MQ_TEST}_outage"
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/outage "max_attempts = 2;" "reconnect_max_ms = 200;"
sed -i 's/initial_ms = 100; max_ms = 1000;/initial_ms = 20; max_ms = 40;/' "$CFG"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g), jsonb_build_object('tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null

msub_start outage "$PMQ_URL" 'obx/outage/#' "$N" -P -H tenant=acme -T 300 -l 3000 -o "$PMQ_DIR/received.ids"
mq_relay_start "$CFG"
mq_stop_after "$N" $((N / 5))
# the down line proves the outage reached the relay while events were pending
for _ in $(seq 300); do grep -q "output mq unavailable" "$PMQ_DIR/relay.log" && break; sleep 0.1; done
grep -q "output mq unavailable" "$PMQ_DIR/relay.log" || fail "the relay never paused the output"
sleep 3 # 2 attempts x 40 ms backoff many times over
during=$(mq_published)
expect_eq "dead rows while the broker is down" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
note "starting mosquitto again ($during published while it was down)"
bash -c "$PMQ_START" || fail "mosquitto start"
mq_relay_wait
msub_wait

expect_eq "published rows" "$(mq_published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "rows with attempts other than 1" "$(sql "SELECT count(*) FROM outbox WHERE attempts <> 1")" 0
grep -qE "output mq is back after [0-9]+\.[0-9] s down$" "$PMQ_DIR/relay.log" || fail "no 'is back' line"
downs=$(grep -c "output mq unavailable" "$PMQ_DIR/relay.log")
backs=$(grep -c "output mq is back after" "$PMQ_DIR/relay.log")
expect_eq "down lines match back lines" "$downs" "$backs"
grep -q "connection lost\|server sent DISCONNECT" "$PMQ_DIR/relay.log" || fail "the driver never saw the connection drop"
grep -q "after [0-9]* attempt" "$PMQ_DIR/relay.log" || fail "the driver never reconnected"
mq_ran_driver
echo "outage: $N published, $(msub_field unique) received, $(msub_field duplicates) duplicates," \
     "$downs outage(s) logged, deferred $(sed -n 's/.*deferred \([0-9]*\).*/\1/p' "$PMQ_DIR/relay.log")"
echo "PASS ${MQ_TEST}_outage"
