#!/bin/bash
# The driver conformance runner against mosquitto.so and a private Mosquitto,
# then create against a broker that refuses anonymous clients (CONNACK 0x87)
# must fail with the reason, as the mqtt driver's does.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../mqtt/mqtt_lib.sh"

mq_private conformance
mq_denied denied
export PMQ_URL DENIED_URL
CFG=$(dirname "$0")/mosquitto.cfg
"$OBX_BIN" check-driver mosquitto -c "$CFG" -o main --bad-output bad \
    --destination "obx/conformance/$$" --timeout 60 || fail "check-driver mosquitto"
"$OBX_BIN" check-driver mosquitto -c "$CFG" -o main --bad-output denied \
    --destination "obx/conformance/$$" --timeout 60 >"$PMQ_DIR/denied.out" 2>&1 ||
    { cat "$PMQ_DIR/denied.out"; fail "check-driver mosquitto (denied)"; }
grep -q "refused the connection: CONNACK 0x87" "$PMQ_DIR/denied.out" ||
    { cat "$PMQ_DIR/denied.out"; fail "create against a denying broker: no CONNACK 0x87 reason"; }
echo "PASS mosq_conformance"
