#!/bin/bash
# Whose fault each webhook answer is, the driver alone (wh_pushback.c) against
# whserver: 429, 503, 408 without Retry-After, a second 429 with Retry-After,
# a connection closed unanswered and an endpoint that never answers are
# pushback (UNAVAILABLE: the output pauses, no attempt counted); requests
# queued behind a hung endpoint are handed back unsent; one event that hangs
# while later requests are answered is the event's (RETRIABLE).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server pushback
"$WH_PUSHBACK" "$OBX_DRIVERS/webhook.so" "$WH_URL/hooks" || fail "wh_pushback"
wh_stop
# hang.1, hang.2 and the poison reached the endpoint; hang.3 to hang.5 never did
expect_eq "hung requests that reached the endpoint" \
    "$(awk -F'\t' '$5 ~ /^order\.hang\./ { n++ } END { print n + 0 }' "$WH_REC")" 3
expect_eq "429 with Retry-After: requests" \
    "$(awk -F'\t' '$5 == "order.push.twice" { n++ } END { print n + 0 }' "$WH_REC")" 2
echo "PASS webhook_pushback"
