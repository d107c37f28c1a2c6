#!/bin/bash
# Through the relay: one row with 200 KB of headers (over the broker's
# negotiated frame_max) among 1,000 normal rows is dead-lettered at its first
# attempt with the size and the limit in last_error; the 1,000 are published
# (in one relay run, without a reconnect) and the queue holds fewer than
# 1,000 extra messages. Before, the relay reconnected in a loop ("table too
# large for buffer") and published nothing.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
Q=$(rmq_queue e2e_bigheaders)
fresh_db rmq_e2e_big_headers
write_relay_cfg "$WORK/relay.cfg" "$AMQP_URL" "$Q" "declare_queue = \"$Q\";"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

enqueue_events 500 10
sql "SELECT outbox_enqueue('Order', 'agg-3', 'order.created', '{\"n\": 900001}',
         jsonb_build_object('big', repeat('h', 200000)))" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 10), 'order.created',
         jsonb_build_object('n', g), jsonb_build_object('seq', g::text))) FROM generate_series(501, 1000) g" >/dev/null

timeout 60 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" \
    || { tail -5 "$WORK/relay.log" >&2; echo "reconnects: $(grep -c reconnecting "$WORK/relay.log")";
         "$RCONSUME" "$AMQP_URL" purge "$Q"; fail "relay run --drain"; }
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 1000
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 1
e=$(sql "SELECT last_error FROM outbox WHERE payload->>'n' = '900001'")
echo "last_error: $e"
grep -Eq "headers too large: the message properties are 2[0-9]{5} bytes .* over the [0-9]+ bytes one frame holds with the broker's frame_max of [0-9]+" <<<"$e" \
    || fail "no size and limit in last_error: $e"
expect_eq "attempts of the dead row" "$(sql "SELECT attempts FROM outbox WHERE dead_at IS NOT NULL")" 1
! grep -q "reconnecting" "$WORK/relay.log" || { grep reconnecting "$WORK/relay.log" | head -3; fail "the connection was lost"; }

r=$("$RCONSUME" "$AMQP_URL" read "$Q" 1000 5000 --header-n seq "" --content-type application/json) \
    || { echo "$r"; "$RCONSUME" "$AMQP_URL" purge "$Q"; fail "consumer checks failed"; }
echo "$r"
"$RCONSUME" "$AMQP_URL" purge "$Q"
extra=$(($(field received "$r") - $(field unique "$r")))
[ "$extra" -lt 1000 ] || fail "$extra extra messages in the queue"
echo "PASS rmq_e2e_big_headers ($extra extra messages)"
