#!/bin/bash
# Names over AMQP's 255-byte short-string limit: a 300-character event type
# and a 300-character header key are refused at publish, PERMANENT, with a
# reason naming the field; nothing of them reaches the wire, so the
# connection stays up and every other event of the batches is confirmed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
Q=$(rmq_queue longnames)
"$RCONSUME" "$AMQP_URL" declare "$Q"

harness url="$AMQP_URL" -- publish 1000 7 "$Q" --long-type 100 --long-header 703 \
    >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/out" "$WORK/err"; fail "harness failed"; }
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
expect_eq ok "$(field ok "$sum")" 998
expect_eq permanent "$(field permanent "$sum")" 2
grep -q "permanent n=100 status=2 detail=event type is 300 bytes, over the AMQP limit of 255" "$WORK/out" \
    || fail "no clear reason for the long event type"
grep -q "permanent n=703 status=2 detail=header key is 300 bytes, over the AMQP limit of 255" "$WORK/out" \
    || fail "no clear reason for the long header key"
# refused before anything was sent: the connection was never torn down
[ "$(field refused "$sum")" -ge 2 ] || fail "the long names were not refused at publish"
! grep -q "reconnecting" "$WORK/err" || { cat "$WORK/err"; fail "the connection was lost"; }
expect_eq "connections" "$(grep -c 'connected to' "$WORK/err")" 1

r=$("$RCONSUME" "$AMQP_URL" read "$Q" 998 5000 --header-n trace t- --content-type application/json) \
    || { echo "$r"; fail "consumer check failed"; }
echo "$r"
"$RCONSUME" "$AMQP_URL" purge "$Q"
echo "PASS long names"
