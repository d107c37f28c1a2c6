#!/bin/bash
# CloudEvents on MQTT 5 (issue 30): one run, a binary-mode output and a
# structured-mode one to two topics; mosquitto_sub (persistent QoS 1
# sessions made before the relay starts) dumps every message with its
# properties and the CloudEvents SDK for JavaScript parses and checks each.
. "$(dirname "$0")/../lib.sh"
WORK=$(mktemp -d /tmp/obx-mqtt-ce.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$OBX_SRC/tests/cloudevents/ce_lib.sh"

T=obx_ce_$$
sub() { mosquitto_sub -V mqttv5 -h "$MQTT_HOST" -p "$MQTT_PORT" -t "$T/$1" -i "${T}_$1" -c -x 300 -q 1 "${@:2}"; }
for m in bin str; do sub "$m" -E || fail "subscribe $T/$m"; done # the sessions keep what comes
fresh_db obx_ce_mqtt
ce_cfg "$WORK/relay.cfg" mqtt "url = \"$MQTT_URL\";" "$T/bin" "$T/str"
ce_run "$WORK/relay.cfg"
for m in bin str; do
    sub "$m" -C "$CE_N" -W 30 -F %j > "$WORK/$m.json" || fail "$T/$m: not every message arrived"
done
ce_check mqtt binary "$WORK/bin.json"
ce_check mqtt structured "$WORK/str.json"
echo "PASS mqtt_cloudevents"
