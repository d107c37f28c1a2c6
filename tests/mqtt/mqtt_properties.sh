#!/bin/bash
# MQTT 5 properties from templates (issue 30, shaping): content_type (one
# placeholder in a constant), response_topic (two placeholders),
# correlation_data (the event id) and message_expiry_s of one output;
# mosquitto_sub (a persistent QoS 1 session made before the relay starts)
# dumps every message with its properties and each is compared with its row.
# An event whose response topic expands to a wildcard is dead at once with
# the reason, the rest delivered. A template with an unknown placeholder
# fails check-config, naming the option. With PROPS_SOURCE=wal
# (wal_mqtt_properties) the same in WAL mode.
. "$(dirname "$0")/../lib.sh"
SOURCE=${PROPS_SOURCE:-poll}
WORK=$(mktemp -d /tmp/obx-mqtt-props.XXXXXX)
T=obx_props_$$
trap 'rm -rf "$WORK"' EXIT
if [ "$SOURCE" = wal ]; then
    . "$OBX_SRC/tests/wal/walmode.sh"
    trap 'drop_wal_slots; rm -rf "$WORK"' EXIT
    fresh_wal_db mqtt_props_wal
else
    fresh_db mqtt_props
fi
sub() { mosquitto_sub -V mqttv5 -h "$MQTT_HOST" -p "$MQTT_PORT" -t "$T/#" -i "$T" -c -x 300 -q 1 "$@"; }
sub -E || fail "subscribe $T/#" # the session keeps what comes

# props_cfg FILE [RESPONSE_TOPIC_TEMPLATE]
props_cfg() {
    local rt=${2:-'replies/${aggregate_type}/${aggregate_id}'}
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; max_attempts = 5; };
outputs = ( { name = "mqtt"; driver = "mqtt";
              options = { url = "$MQTT_URL";
                          content_type = "application/vnd.\${aggregate_type}+json";
                          response_topic = "$rt";
                          correlation_data = "\${event_id}";
                          message_expiry_s = 3600; }; } );
routes = ( { event_type = "*"; output = "mqtt"; destination = "$T/\${event_type}"; } );
EOF
    [ "$SOURCE" = poll ] || to_wal_mode "$1"
}
props_cfg "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

# a bad template: refused before anything runs, naming the option
# (through the environment: the config file itself refuses an unknown ${...})
props_cfg "$WORK/bad.cfg" '${BAD_TPL}'
if BAD_TPL='r/${bogus}' "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1; then
    fail "check-config took response_topic = \"r/\${bogus}\""
fi
grep -q 'response_topic: unknown placeholder ${bogus}' "$WORK/bad.out" ||
    fail "check-config: no reason naming the option: $(cat "$WORK/bad.out")"

sql "SELECT outbox_enqueue(CASE WHEN g % 3 = 0 THEN 'Customer' ELSE 'Order' END, 'a-' || g,
        CASE WHEN g % 2 = 0 THEN 'order.paid' ELSE 'order.created' END, jsonb_build_object('n', g))
     FROM generate_series(1, 9) g" >/dev/null
sql "SELECT outbox_enqueue('Order', 'a+b', 'order.created', '{\"n\": 100}')" >/dev/null
timeout 60 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" ||
    { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }

# what each row must have been sent with, and what came
sql "SELECT event_id, 'application/vnd.' || aggregate_type || '+json',
            'replies/' || aggregate_type || '/' || aggregate_id, event_id
     FROM outbox WHERE aggregate_id <> 'a+b'" | tr '|' '\t' | sort >"$WORK/want.tsv"
sub -C 9 -W 20 -F %j >"$WORK/got.json" || fail "$T: not every message arrived"
jq -r '.properties | [."user-properties".event_id, ."content-type", ."response-topic",
        ."correlation-data"] | @tsv' "$WORK/got.json" | sort >"$WORK/got.tsv"
diff "$WORK/want.tsv" "$WORK/got.tsv" >&2 || fail "properties differ from the rows (< wanted, > received)"
# the broker counts the expiry down while it holds a message
jq -e -s 'all(.[]; .properties."message-expiry-interval" | . > 3000 and . <= 3600)' \
    "$WORK/got.json" >/dev/null || fail "message-expiry-interval not about 3600 on every message"

if [ "$SOURCE" = poll ]; then
    e=$(sql "SELECT last_error FROM outbox WHERE aggregate_id = 'a+b' AND dead_at IS NOT NULL")
else
    e=$(sql "SELECT dl_error FROM outbox_dead_letter WHERE aggregate_id = 'a+b'")
fi
grep -q 'response_topic "replies/Order/a+b" (from "replies/${aggregate_type}/${aggregate_id}"): invalid topic: wildcards' <<<"$e" ||
    fail "response topic with a wildcard: not dead with the reason: '$e'"
echo "PASS mqtt_properties ($SOURCE)"
