#!/bin/bash
# The driver conformance runner against mqtt.so and a private Mosquitto.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

mq_private conformance
export PMQ_URL
"$OBX_BIN" check-driver mqtt -c "$(dirname "$0")/mqtt.cfg" -o main --bad-output bad \
    --destination "obx/conformance/$$" --timeout 60 || fail "check-driver mqtt"
echo "PASS mqtt_conformance"
