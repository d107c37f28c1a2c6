#!/bin/bash
# A hung cluster: a private mock stopped (SIGSTOP: connections stay open,
# nothing answers) for 25 s (KDRV_HANG_MS; 2.5 times the 10 s message
# timeout it sets) under a steady stream (2,000 messages a second, at most
# 1,000 in flight). No message
# completes RETRIABLE or PERMANENT (nothing would count an attempt or be
# dead-lettered): timeouts complete UNAVAILABLE, the harness pauses and
# probes as the host does; after the mock answers again every message is
# acknowledged, and the consumer finds every event (duplicates counted).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.hang
kmock_start "$topic:6"
KDRV_HANG_MS=${KDRV_HANG_MS:-25000} "$KDRV" hang -d "$KAFKA_SO" -b "$KM_BOOTSTRAP" -t "$topic" \
    -n "${HANG_EVENTS:-20000}" -K "$KM_PID" -o message_timeout_ms=10000 -e "$WORK/ids" 2> "$WORK/err" || { tail -30 "$WORK/err"; fail "hang scenario"; }
grep "^hang:" "$WORK/err"
expect_eq "acknowledged" "$(wc -l < "$WORK/ids")" "${HANG_EVENTS:-20000}"
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -i 20000 -k > "$WORK/got" || fail "consumer checks failed"
check_delivery "$WORK/ids" "$WORK/got"
echo "PASS kafka_driver_hang ($DUPS duplicates)"
