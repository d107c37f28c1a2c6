# Helpers for the MQTT tests; source after tests/lib.sh.
MQTT_TEST_BIN=${MQTT_TEST_BIN:?MQTT_TEST_BIN must name the directory with msub and mharness}
MSUB=$MQTT_TEST_BIN/msub
MHARNESS=$MQTT_TEST_BIN/mharness
MQTT_SO=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}/mqtt.so

# mq_private NAME PORT [persist]: start a private Mosquitto (never the shared
# one: fault tests stop it) and stop it when the test exits. Sets PMQ_URL,
# PMQ_STOP, PMQ_START.
mq_private() {
    local dir=/tmp/obx-mqtt-$1 port=$2 persist=${3:-false}
    PMQ_STOP="SVC_DIR=$dir MQTT_PORT=$port $SERVICES mqtt-stop"
    PMQ_START="SVC_DIR=$dir MQTT_PORT=$port MQ_PERSIST=$persist $SERVICES mqtt-start"
    bash -c "$PMQ_STOP" 2>/dev/null || true
    rm -rf "$dir"
    bash -c "$PMQ_START" || fail "private mosquitto on $port did not start"
    PMQ_URL=tcp://127.0.0.1:$port
    PMQ_DIR=$dir
    trap 'mq_cleanup' EXIT
}
mq_cleanup() {
    local pid
    for pid in ${MQ_BG_PIDS:-}; do kill "$pid" 2>/dev/null || true; done
    bash -c "$PMQ_STOP" 2>/dev/null || true
}
