#!/bin/bash
# The mosquitto driver through a hung broker, without the relay: the mqtt
# driver's scenario (tests/mqtt/mhang.c, tests/mqtt/mqtt_driver_hang.sh) on
# mosquitto.so. A private Mosquitto SIGSTOPped 20 s under a steady stream,
# publish_timeout_ms 1 s, outcomes counted as the engine counts them with
# max_attempts = 2: the timeouts are pushback (UNAVAILABLE, and the driver
# makes the connection again), nothing dead, every event acknowledged once
# the broker is back; msub checks first deliveries in order per aggregate.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mosq_lib.sh"

N=3000
MOSQ_SO=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}/mosquitto.so
mq_private mosq_drvhang
BROKER=$(cat "$PMQ_DIR/mosquitto/mosquitto.pid")
trap 'kill -CONT "$BROKER" 2>/dev/null || true; mq_cleanup' EXIT
msub_start mosq_drvhang "$PMQ_URL" 'obx/mosq_drvhang/#' "$N" -T 300
MQTT_PID=$BROKER "$MQTT_TEST_BIN/mhang" "$MOSQ_SO" "$PMQ_URL" obx/mosq_drvhang/orders "$N" 20 ||
    fail "hang scenario"
msub_wait
echo "PASS mosq_driver_hang ($N events, received $(msub_field unique), duplicates $(msub_field duplicates))"
