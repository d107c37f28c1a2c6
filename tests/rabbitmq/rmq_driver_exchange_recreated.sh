#!/bin/bash
# An exchange created while the driver runs is used at once (issue 34: a
# missing exchange was cached as missing for 5 s, dead-lettering every event
# to it meanwhile). One driver instance: event 100 goes to an exchange that
# does not exist (PERMANENT, NOT_FOUND); once 500 events are answered the
# test creates that exchange (bound to a second queue), and event 600, sent
# to it right after, is delivered. Every other event is delivered in order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
Q=$(rmq_queue recreated)
X=obx_recreated_x_$$
trap '"$RCONSUME" "$AMQP_URL" delete "${Q}_x" "$X" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
"$RCONSUME" "$AMQP_URL" declare "$Q"

harness url="$AMQP_URL" -- publish 1000 7 "$Q" --bad-dest 100 "$X/k" --bad-dest 600 "$X/k" \
    --wait-at 500 "$WORK/w" --deadline 30 >"$WORK/out" 2>"$WORK/err" &
pid=$!
for ((i = 0; i < 300; i++)); do [ -e "$WORK/w" ] && break; sleep 0.1; done
[ -e "$WORK/w" ] || { kill $pid; fail "the harness never reached event 500"; }
"$RCONSUME" "$AMQP_URL" declare "${Q}_x" "$X" k
touch "$WORK/w.go"
wait $pid || { cat "$WORK/out"; tail -5 "$WORK/err"; fail "harness failed"; }
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
expect_eq ok "$(field ok "$sum")" 999
expect_eq permanent "$(field permanent "$sum")" 1
grep -q "permanent n=100 status=2 detail=NOT_FOUND - no exchange '$X'" "$WORK/out" \
    || fail "no NOT_FOUND for event 100"
r=$("$RCONSUME" "$AMQP_URL" read "${Q}_x" 1 3000) || { echo "$r"; fail "event 600 not in the new exchange's queue"; }
r=$("$RCONSUME" "$AMQP_URL" read "$Q" 998 5000 --header-n trace t-) || { echo "$r"; fail "consumer check failed"; }
echo "$r"
"$RCONSUME" "$AMQP_URL" delete "$Q"
echo "PASS exchange created while running (event 600 delivered through it)"
