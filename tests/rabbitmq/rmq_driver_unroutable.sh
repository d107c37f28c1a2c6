#!/bin/bash
# Unroutable messages through the driver alone: one to an exchange with no
# matching binding (mandatory -> basic.return NO_ROUTE before the ack), one to
# a missing exchange (NOT_FOUND, found by the passive check). Both fail
# PERMANENT with the broker's text; the later events of their aggregates in
# flight or in the batch fail with them (in order) and go again; every event
# around them is delivered, in order, with all properties.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
Q=$(rmq_queue unroutable)
"$RCONSUME" "$AMQP_URL" declare "$Q"

out=$(harness url="$AMQP_URL" -- publish 3000 17 "$Q" --bad-dest 1500 amq.topic/no.binding.here \
      --bad-dest 2222 obx_no_such_exchange/x) || { echo "$out"; fail "harness failed"; }
echo "$out"
sum=$(tail -1 <<<"$out")
expect_eq ok "$(field ok "$sum")" 2998
expect_eq permanent "$(field permanent "$sum")" 2
grep -q "permanent n=1500 status=2 detail=NO_ROUTE (exchange 'amq.topic', routing key 'no.binding.here')" <<<"$out" \
    || fail "no NO_ROUTE detail for event 1500"
grep -q "permanent n=2222 status=2 detail=NOT_FOUND - no exchange 'obx_no_such_exchange'" <<<"$out" \
    || fail "no NOT_FOUND detail for event 2222"
# in order: the later events of 1500's and 2222's aggregates in their batches
# were failed or refused with them (and delivered when sent again)
[ "$(field held "$sum")" -ge 2 ] || fail "later events of a failed aggregate were not held back"

# unroutable = retriable classifies (its 9 routable events are delivered too) the same return as RETRIABLE (the harness retries until its deadline)
out=$(harness url="$AMQP_URL" unroutable=retriable -- publish 10 2 "$Q" --bad-dest 4 amq.topic/nope --deadline 2) \
    && fail "retriable unroutable event ended"
grep -q "retriable, e.g. 'NO_ROUTE" <<<"$out$(harness url="$AMQP_URL" unroutable=retriable -- publish 1 1 "$Q" --bad-dest 0 amq.topic/nope --deadline 1 2>&1)" \
    || fail "retriable NO_ROUTE not reported"

r=$("$RCONSUME" "$AMQP_URL" read "$Q" 3007 5000 --header-n trace t- --content-type application/json) \
    || { echo "$r"; fail "consumer check failed"; }
echo "$r"
"$RCONSUME" "$AMQP_URL" purge "$Q"
echo "PASS unroutable"
