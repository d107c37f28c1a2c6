#!/bin/bash
# An oversized event (message.max.bytes=2000 in the output's properties) is
# dead-lettered before sending, with its size and the limit in last_error;
# the events around it, in its own aggregate and others, are delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.oversize.$$.$RANDOM
fresh_db kt_e2e_oversize
write_relay_cfg "$WORK/relay.cfg" "$KAFKA_BOOTSTRAP" "$topic" 1 30000 '["message.max.bytes", "2000"]'
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 2), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 10) g" >/dev/null
big=$(sql "SELECT outbox_enqueue('Order', 'agg-1', 'order.created', jsonb_build_object('pad', repeat('x', 10000)))")
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 2), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(11, 20) g" >/dev/null
sql "SELECT event_id FROM outbox WHERE event_id <> '$big'" > "$WORK/ids"

timeout 300 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2> "$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
expect_eq "dead rows" "$(sql "SELECT event_id FROM outbox WHERE dead_at IS NOT NULL")" "$big"
err=$(sql "SELECT last_error FROM outbox WHERE event_id = '$big'")
note "last_error: $err"
case $err in *"message too large: "*" bytes "*"is over message.max.bytes 2000"*) ;; *) fail "last_error does not say the size and the limit: $err" ;; esac
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 20
"$KCONSUME" -b "$KAFKA_BOOTSTRAP" -t "$topic" -n 20 -i 20000 -k -h seq > "$WORK/got" || fail "consumer checks failed"
check_delivery "$WORK/ids" "$WORK/got"
expect_eq "messages in topic" "$(wc -l < "$WORK/got")" 20
echo "PASS kafka_e2e_oversize"
