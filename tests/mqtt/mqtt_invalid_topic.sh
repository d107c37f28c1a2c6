#!/bin/bash
# An event whose destination is not a valid MQTT topic name (wildcards) is
# dead-lettered at once with the reason in last_error; the events around it,
# in the same aggregate and in others, are delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

mq_private invalid
fresh_db mqtt_invalid
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/inv
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
# 30 events over 3 aggregates; numbers 10 and 20 carry a destination override
# that is no topic name ('#' and '+' are only for subscriptions)
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 3), 'order.created', jsonb_build_object('n', g),
         NULL, CASE g WHEN 10 THEN 'obx/inv/bad/#' WHEN 20 THEN 'obx/+/bad' END))
     FROM generate_series(1, 30) g" >/dev/null

msub_start invalid "$PMQ_URL" 'obx/#' 28 -T 120 -l 1000
"$OBX_BIN" run -c "$CFG" --drain >"$PMQ_DIR/relay.log" 2>&1 || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain failed"; }
msub_wait

expect_eq "published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 28
expect_eq "dead" "$(sql "SELECT string_agg(payload->>'n', ',' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")" "10,20"
expect_eq "attempts of the dead" "$(sql "SELECT string_agg(attempts::text, ',' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")" "1,1"
errors=$(sql "SELECT string_agg(last_error, ' | ' ORDER BY id) FROM outbox WHERE dead_at IS NOT NULL")
echo "last_error: $errors"
case "$errors" in
    *"invalid topic"*"wildcards"*"|"*"invalid topic"*"wildcards"*) ;;
    *) fail "last_error does not give the reason: $errors" ;;
esac
# the neighbours in the dead events' aggregates (agg-1: 10 -> 13, agg-2: 20 -> 23) went out
expect_eq "after the dead ones" "$(sql "SELECT count(*) FROM outbox WHERE payload->>'n' IN ('13','23') AND published_at IS NOT NULL")" 2
echo "PASS mqtt_invalid_topic"
