#!/bin/bash
# One bad event among 1,000 costs that event alone: a topic deeper than
# Mosquitto takes (it would drop the connection under everybody's
# publishes) is refused before it is sent, and a payload over the broker's
# message_size_limit (PUBACK 0x95, Packet too large) is dead at its first
# attempt instead of retried; the 1,000 others are published.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

dir=$MQ_ROOT/badone port=$(free_ports 1)
rm -rf "$dir" && mkdir -p "$dir" && chmod 755 "$dir"
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmessage_size_limit 4000\npersistence false\nlog_dest stderr\n' \
    "$port" > "$dir/mosquitto.conf"
chmod 644 "$dir/mosquitto.conf"
mosquitto -c "$dir/mosquitto.conf" </dev/null >"$dir/mosquitto.log" 2>&1 &
MQ_BG_PIDS="$!"
trap 'for p in $MQ_BG_PIDS; do kill "$p" 2>/dev/null || true; done' EXIT
for i in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
URL=tcp://127.0.0.1:$port

fresh_db mqtt_bad_one
CFG=$dir/relay.cfg
mq_relay_cfg "$CFG" "$URL" obx/bad
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
# 1,002 events over 10 aggregates; number 500 goes to a topic of 251 levels,
# number 700 carries a 6 KB payload
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 10), 'order.created',
         CASE WHEN g = 700 THEN jsonb_build_object('n', g, 'pad', repeat('x', 6000))
              ELSE jsonb_build_object('n', g) END,
         NULL, CASE WHEN g = 500 THEN 'obx/bad/' || repeat('a/', 250) || 'end' END))
     FROM generate_series(1, 1002) g" >/dev/null

msub_start badone "$URL" 'obx/#' 1000 -T 120 -l 1000
"$OBX_BIN" run -c "$CFG" --drain >"$dir/relay.log" 2>&1 || { tail -20 "$dir/relay.log"; fail "relay run --drain failed"; }
msub_wait

expect_eq "published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 1000
expect_eq "dead" "$(sql "SELECT string_agg(payload->>'n', ',' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")" "500,700"
expect_eq "attempts of the dead" "$(sql "SELECT string_agg(attempts::text, ',' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")" "1,1"
errors=$(sql "SELECT string_agg(last_error, ' | ' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")
echo "last_error: $errors"
case "$errors" in
    *"invalid topic"*"levels"*"|"*) ;;
    *) fail "the deep topic's last_error does not give the reason: $errors" ;;
esac
# the connection was never dropped for the deep topic
lost=$(grep -c "connection lost\|given back" "$dir/relay.log" || true)
expect_eq "connections lost" "$lost" 0
echo "PASS mqtt_bad_one"
