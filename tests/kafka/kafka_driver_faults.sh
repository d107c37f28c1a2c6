#!/bin/bash
# Brokers of a private mock cluster go down for 5 s mid-run and come back:
# retriable completions are re-published, the same producer recovers by
# itself, nothing is lost.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.faults
kmock_start "$topic:6"
"$KDRV" faults -d "$KAFKA_SO" -b "$KM_BOOTSTRAP" -t "$topic" -n 20000 -K "$KM_PID" \
    -o message_timeout_ms=3000 -e "$WORK/ids" || fail "faults scenario"
expect_eq "acknowledged" "$(wc -l < "$WORK/ids")" 20000
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -i 10000 -k > "$WORK/got" || fail "consumer checks failed"
check_delivery "$WORK/ids" "$WORK/got"
grep -q "brokers DOWN" "$WORK/kmock.err" && grep -q "brokers UP" "$WORK/kmock.err" || fail "kmock did not go down and up"
echo "PASS kafka_driver_faults (duplicates: $DUPS)"
