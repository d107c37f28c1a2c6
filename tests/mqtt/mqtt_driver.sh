#!/bin/bash
# The MQTT driver on its own (no relay): mharness drives mqtt.so through a
# recording fake host against a private Mosquitto, msub checks what arrives.
# Config refusals, lazy connect while the broker is down, a broker refusing
# the client (CONNACK), invalid topics,
# a batch larger than the window, order after a refused publish (ACL),
# close with messages in flight, two instances, 20,000 messages with user
# properties and per-aggregate order, broker stopped and restarted, broker
# frozen (publish timeouts, late acks ignored) and killed with publishes in flight.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

mq_private driver
H=("$MHARNESS" "$MQTT_SO" "$PMQ_URL")

note "config refusals";      "${H[@]}" config  || fail "config scenario"
note "broker down";          "${H[@]}" offline || fail "offline scenario"
note "invalid topics";       "${H[@]}" invalid || fail "invalid-topic scenario"
note "close with in-flight"; "${H[@]}" close   || fail "close scenario"
note "two instances";        "${H[@]}" two     || fail "two-instance scenario"
# batches of 1,000 with max_in_flight 100: sent in slices as acknowledgements
# arrive, never waiting for window space (the driver's counters say so)
note "batch larger than the window"; "${H[@]}" window 1000 100 obx/window || fail "window scenario"
# a broker that refuses one topic (ACL, PUBACK 0x87): later events of that
# event's aggregate must not count as delivered ahead of it
mq_acl driver-acl
note "in order after a failure"; "$MHARNESS" "$MQTT_SO" "$ACL_URL" order || fail "order scenario"
# a broker that refuses anonymous clients: CONNACK 0x87 fails create
mq_denied driver-denied
note "connection refused by the broker"; "$MHARNESS" "$MQTT_SO" "$DENIED_URL" denied || fail "denied scenario"

note "20,000 messages, subscriber checks properties and order"
N=20000
rm -f $PMQ_DIR/ready
"${MSUB[@]}" -u "$PMQ_URL" -t 'obx/pub/#' -n $N -i msub-driver-$$ -r $PMQ_DIR/ready \
    -H traceparent=00-abc-def-01 -T 300 > $PMQ_DIR/msub.out &
MSUB_PID=$!; MQ_BG_PIDS="${MQ_BG_PIDS:-} $MSUB_PID"
for _ in $(seq 100); do [ -e $PMQ_DIR/ready ] && break; sleep 0.1; done
[ -e $PMQ_DIR/ready ] || fail "subscriber not ready"
"${H[@]}" publish $N obx/pub/orders 100 || fail "publish scenario"
wait $MSUB_PID || { cat $PMQ_DIR/msub.out; fail "subscriber: not all messages, or wrong properties/order"; }
cat $PMQ_DIR/msub.out

note "broker stopped and restarted while publishing"
MQTT_STOP_CMD=$PMQ_STOP MQTT_START_CMD=$PMQ_START "${H[@]}" restart $N obx/restart || fail "restart scenario"
note "broker frozen (timeouts), then killed with publishes in flight"
MQTT_PID=$(cat "$PMQ_DIR/mosquitto/mosquitto.pid") MQTT_START_CMD=$PMQ_START "${H[@]}" freeze obx/freeze \
    || fail "freeze scenario"
echo "PASS mqtt_driver"
