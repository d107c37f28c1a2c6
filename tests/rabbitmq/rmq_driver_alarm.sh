#!/bin/bash
# A resource alarm is pushback (issue 34). On a PRIVATE RabbitMQ whose memory
# alarm is raised (watermark 0.0001) for 10 s:
# - 500 small events: the driver advertises the connection.blocked capability
#   (rabbitmq-c 0.11 does not), so the broker says when it stops reading; the
#   driver completes what it has unconfirmed and refuses the rest UNAVAILABLE
#   until connection.unblocked; nothing is charged an attempt, all delivered
#   in order. (The previous driver was never told: no "blocked" in its log.)
# - one 16 MB event: the broker stops reading in the middle of its body. A
#   write is bounded by write_timeout_ms (2 s, TCP_USER_TIMEOUT): the
#   connection is given up, the event is UNAVAILABLE, and offered again until
#   the alarm ends. (The previous driver sat in that write until the alarm
#   ended: rabbitmq-c writes with no deadline while heartbeats come.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_start
ALARM_S=6
Q=$(rmq_queue alarm)
"$RCONSUME" "$PRIV_URL" declare "$Q"

# alarm_round NAME HARNESS-ARGS...: the harness runs through an alarm of ALARM_S
alarm_round() {
    local name=$1; shift
    priv_alarm on
    note "$name: memory alarm raised"
    harness url="$PRIV_URL" -- publish "$@" --deadline 90 >"$WORK/$name.out" 2>"$WORK/$name.err" &
    local pid=$!
    sleep $ALARM_S
    priv_alarm off
    note "$name: memory alarm cleared"
    wait $pid || { cat "$WORK/$name.out"; tail -5 "$WORK/$name.err"; fail "$name: harness failed"; }
    SUM=$(tail -1 "$WORK/$name.out")
    echo "$name: $SUM"
    echo "$name: reconnects $(grep -c reconnecting "$WORK/$name.err" || true)"
    expect_eq "$name: attempts charged (RETRIABLE completions)" "$(field retriable "$SUM")" 0
    expect_eq "$name: permanent" "$(field permanent "$SUM")" 0
}

alarm_round small 500 7 "$Q"
expect_eq "small: ok" "$(field ok "$SUM")" 500
grep -m1 "broker blocked publishing" "$WORK/small.err" || fail "small: connection.blocked never came"
grep -m1 "broker unblocked publishing" "$WORK/small.err" || fail "small: connection.unblocked never came"
[ "$(field unavailable "$SUM")" -gt 0 ] || fail "small: nothing was refused while blocked"
r=$("$RCONSUME" "$PRIV_URL" read "$Q" 500 5000 --header-n trace t-) || { echo "$r"; fail "small: consumer check failed"; }
echo "small: $r"

alarm_round big 1 1 "$Q" --big-payload 0 16000000
expect_eq "big: ok" "$(field ok "$SUM")" 1
grep -m1 "took none of the data written to it for 2000 ms" "$WORK/big.err" \
    || fail "big: the write to the blocked broker was not given up"
r=$("$RCONSUME" "$PRIV_URL" read "$Q" 1 5000) || { echo "$r"; fail "big: consumer check failed"; }
echo "big: $r"
echo "PASS alarm ($ALARM_S s twice: 0 charged)"
