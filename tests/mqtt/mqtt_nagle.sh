#!/bin/bash
# Nudges through a broker with Nagle on (Mosquitto's defaults: Receive
# Maximum 20, set_tcp_nodelay false): the tail of a batch, whose last PUBACKs
# the broker holds until the relay's delayed TCP ACK, is nudged with an
# UNSUBSCRIBE of a filter never subscribed to (mqtt_conn.c). The nudges must
# change nothing else: every event delivered once, in order per aggregate,
# none failed or dead, no protocol error at the broker. How many nudges were
# sent is printed, not checked (it depends on timing).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=5000
AGGS=50
DIR=$MQ_ROOT/nagle
PORT=$(free_ports 1)
rm -rf "$DIR" && mkdir -p "$DIR" && chmod 755 "$DIR"
# stock settings, but no queue limit for the subscriber (it must see every event)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nlog_dest stderr\n' \
    "$PORT" > "$DIR/mosquitto.conf"
chmod 644 "$DIR/mosquitto.conf"
mosquitto -c "$DIR/mosquitto.conf" </dev/null >"$DIR/mosquitto.log" 2>&1 &
MQ_BG_PIDS="$!" PMQ_STOP=true # mq_cleanup kills it (not a services.sh broker)
trap 'mq_cleanup' EXIT
for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
URL=tcp://127.0.0.1:$PORT

fresh_db mqtt_nagle
CFG=$DIR/relay.cfg
mq_relay_cfg "$CFG" "$URL" obx/nagle
sed -i 's/max_in_flight = 500;//' "$CFG" # the defaults: url and qos (and the test's client id, content type)
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null

msub_start nagle "$URL" 'obx/nagle/#' "$N" -T 300 -l 1000
"$OBX_BIN" run -c "$CFG" --drain >"$DIR/relay.log" 2>&1 || { tail -20 "$DIR/relay.log"; fail "relay run --drain"; }
msub_wait
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "order violations" "$(msub_field order_violations)" 0
expect_eq "duplicates" "$(msub_field duplicates)" 0
failed=$(sed -n 's/.* \([0-9]*\) failed, .*/\1/p' "$DIR/relay.log" | awk '{ s += $1 } END { print s + 0 }')
expect_eq "failed (driver counters)" "$failed" 0
if grep -i "protocol error\|disconnected, not authorised\|malformed" "$DIR/mosquitto.log"; then
    fail "the broker logged an error for the relay's packets"
fi
nudges=$(sed -n 's/.*nudges \([0-9]*\).*/\1/p' "$DIR/relay.log" | awk '{ s += $1 } END { print s + 0 }')
echo "PASS mqtt_nagle ($N events over $AGGS aggregates through Mosquitto with Nagle on, nudges $nudges)"
