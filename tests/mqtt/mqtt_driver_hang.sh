#!/bin/bash
# MQTT_DRIVER through a hung broker, without the relay (tests/mqtt/mhang.c;
# mqtt_driver_hang and mosq_driver_hang): a private Mosquitto SIGSTOPped 20 s
# under a steady stream, publish_timeout_ms 1 s, outcomes counted as the
# engine counts them with max_attempts = 2. The timeouts are pushback
# (UNAVAILABLE): nothing dead, every event acknowledged once the broker is
# back; msub checks first deliveries in order per aggregate and counts the
# duplicates (publishes the broker took while hung, sent again).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=3000
mq_private drvhang
BROKER=$(cat "$PMQ_DIR/mosquitto/mosquitto.pid")
trap 'kill -CONT "$BROKER" 2>/dev/null || true; mq_cleanup' EXIT
msub_start drvhang "$PMQ_URL" 'obx/drvhang/#' "$N" -T 300
MQTT_PID=$BROKER "$MQTT_TEST_BIN/mhang" "$MQTT_SO" "$PMQ_URL" obx/drvhang/orders "$N" 20 ||
    fail "hang scenario"
msub_wait
echo "PASS ${MQ_TEST}_driver_hang ($N events, received $(msub_field unique), duplicates $(msub_field duplicates))"
