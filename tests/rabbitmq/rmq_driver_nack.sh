#!/bin/bash
# A full queue is pushback, not the events' fault (issue 34). The queue holds
# 100 messages and refuses more (x-overflow reject-publish: the broker nacks
# them); nobody consumes. 300 events: the first 100 are confirmed, the rest
# nacked again and again for 5 s, each nack UNAVAILABLE (no attempt counted:
# the previous driver said RETRIABLE, an attempt each time). Then, with the
# driver idle, a consumer starts, and every event is delivered, in order.
# The batch holds runs of 7 aggregates: the driver warns, once, that a queue
# refusing one of a run may take a later one ahead of it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
Q=$(rmq_queue nack)
rmq_delete_at_exit "$Q"
"$RCONSUME" "$AMQP_URL" declare-bounded "$Q" 100

harness url="$AMQP_URL" -- publish 300 7 "$Q" --pause-after 5 "$WORK/p" --deadline 60 \
    >"$WORK/out" 2>"$WORK/err" &
pid=$!
for ((i = 0; i < 300; i++)); do [ -e "$WORK/p" ] && break; sleep 0.1; done
[ -e "$WORK/p" ] || { kill $pid; fail "the harness never paused"; }
"$RCONSUME" "$AMQP_URL" read "$Q" 300 10000 --header-n trace t- >"$WORK/consumer" &
consumer=$!
sleep 1 # the consumer drains the 100 and waits
touch "$WORK/p.go"
wait $pid || { cat "$WORK/out"; tail -5 "$WORK/err"; fail "harness failed"; }
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
expect_eq ok "$(field ok "$sum")" 300
expect_eq "attempts charged (RETRIABLE completions)" "$(field retriable "$sum")" 0
[ "$(field unavailable "$sum")" -ge 200 ] || fail "fewer than 200 nacks: the queue was not full"
expect_eq "warnings that a refused run may be overtaken" \
    "$(grep -c 'refused a message (nack) with later ones of its aggregate' "$WORK/err" || true)" 1
wait $consumer || { cat "$WORK/consumer"; fail "consumer check failed"; }
cat "$WORK/consumer"
echo "PASS nack is pushback ($(field unavailable "$sum") UNAVAILABLE, 0 charged)"
