#!/bin/bash
# Headers larger than one frame (the broker's negotiated frame_max, 131072
# by default): rabbitmq-c would write the publish method and then fail to
# encode its header frame ("table too large for buffer"), leaving a
# connection the broker can no longer read; every unconfirmed message went
# with it, and the event, sent again, did it again (a reconnect loop and a
# flood of duplicates). Among 1,001 events, one with 200 KB of headers is
# refused at publish, PERMANENT, with its size and the limit; one with
# 100 KB (under the frame) is delivered; the connection stays up, the 1,000
# are delivered, and the queue holds fewer than 1,000 extra messages.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
Q=$(rmq_queue bigheaders)
"$RCONSUME" "$AMQP_URL" declare "$Q"

harness url="$AMQP_URL" -- publish 1001 7 "$Q" --big-header 500 200000 --big-header 700 100000 \
    --deadline 30 >"$WORK/out" 2>"$WORK/err" \
    || { cat "$WORK/out"; tail -5 "$WORK/err"; echo "reconnects: $(grep -c reconnecting "$WORK/err")";
         "$RCONSUME" "$AMQP_URL" purge "$Q"; fail "harness failed"; }
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
expect_eq ok "$(field ok "$sum")" 1000
expect_eq permanent "$(field permanent "$sum")" 1
grep -Eq "permanent n=500 status=2 detail=headers too large: the message properties are 2[0-9]{5} bytes \(headers 2[0-9]{5}\), over the [0-9]+ bytes one frame holds with the broker's frame_max of [0-9]+" "$WORK/out" \
    || fail "no reason with the size and the limit for the oversized headers"
[ "$(field refused "$sum")" -ge 1 ] || fail "the oversized headers were not refused at publish"
! grep -q "reconnecting" "$WORK/err" || { grep reconnecting "$WORK/err" | head -3; fail "the connection was lost"; }
expect_eq "connections" "$(grep -c 'connected to' "$WORK/err")" 1

r=$("$RCONSUME" "$AMQP_URL" read "$Q" 1000 5000 --header-n trace t- --content-type application/json) \
    || { echo "$r"; "$RCONSUME" "$AMQP_URL" purge "$Q"; fail "consumer check failed"; }
echo "$r"
"$RCONSUME" "$AMQP_URL" purge "$Q"
extra=$(($(field received "$r") - $(field unique "$r")))
[ "$extra" -lt 1000 ] || fail "$extra extra messages in the queue"
echo "PASS big headers ($extra extra messages)"
