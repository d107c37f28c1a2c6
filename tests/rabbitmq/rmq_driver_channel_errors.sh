#!/bin/bash
# A channel-level error costs the channel, not the connection (issue 34). On a
# PRIVATE RabbitMQ with max_message_size = 65536 and no write permission on
# one exchange, among 1,002 pipelined events to an exchange: one to the
# refused exchange (ACCESS_REFUSED) and one with a 100 KB payload
# (PRECONDITION_FAILED) each make the broker close the publishing channel.
# Each completes PERMANENT with the broker's code and text (found as the one
# unconfirmed message after the last one the broker answered, or sent alone
# when several could be it); the other unconfirmed ones go again, counting
# nothing; the channel is opened again on the same connection. The 1,000 are
# delivered in order; no reconnect; extra copies in the queue are printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_make_conf 'max_message_size = 65536'
priv_start
# write on every exchange but obx_refused_x (the queues' own, the default exchange, ...)
priv rabbitmqctl -q set_permissions -p / guest '.*' '^(?!obx_refused_x$).*' '.*'
Q=$(rmq_queue chanerr)
X=obx_chanerr_x
"$RCONSUME" "$PRIV_URL" declare "$Q" "$X" "orders.#"
"$RCONSUME" "$PRIV_URL" declare "${Q}_refused" obx_refused_x "#"

harness url="$PRIV_URL" -- publish 1002 7 "$X/orders.created" --bad-dest 300 obx_refused_x/orders.created \
    --big-payload 600 100000 --deadline 30 >"$WORK/out" 2>"$WORK/err" \
    || { cat "$WORK/out"; tail -5 "$WORK/err"; fail "harness failed"; }
grep "closed the channel" "$WORK/err" | sed "s/^.*output/output/" | cut -c1-200
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
reconnects=$(grep -c "reconnecting" "$WORK/err" || true)
closes=$(grep -c "opening it again" "$WORK/err" || true)
echo "reconnects=$reconnects channel closes=$closes"
expect_eq ok "$(field ok "$sum")" 1000
expect_eq permanent "$(field permanent "$sum")" 2
expect_eq "attempts charged (RETRIABLE completions)" "$(field retriable "$sum")" 0
grep -q "permanent n=300 status=2 detail=ACCESS_REFUSED - access to exchange 'obx_refused_x' in vhost '/' refused" "$WORK/out" \
    || fail "no ACCESS_REFUSED for the refused exchange"
grep -q "permanent n=600 status=2 detail=PRECONDITION_FAILED - message size 100000 is larger than configured max size 65536" "$WORK/out" \
    || fail "no PRECONDITION_FAILED for the 100 KB payload"
expect_eq reconnects "$reconnects" 0
expect_eq connections "$(grep -c 'connected to' "$WORK/err")" 1

r=$("$RCONSUME" "$PRIV_URL" read "$Q" 1000 5000 --header-n trace t- --content-type application/json) \
    || { echo "$r"; fail "consumer check failed"; }
echo "$r"
extra=$(($(field received "$r") - $(field unique "$r")))
[ "$extra" -lt 1000 ] || fail "$extra extra messages in the queue"
echo "PASS channel errors (reconnects $reconnects, channel closes $closes, $extra extra messages)"
