#!/bin/bash
# A message over message.max.bytes is refused before sending, PERMANENT with
# its size and the limit; its neighbours are delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.oversize.$$.$RANDOM
"$KDRV" oversize -d "$KAFKA_SO" -b "$KAFKA_BOOTSTRAP" -t "$topic" -p message.max.bytes=2000 -e "$WORK/ids" \
    || fail "oversize scenario"
expect_eq "acknowledged" "$(wc -l < "$WORK/ids")" 2
"$KCONSUME" -b "$KAFKA_BOOTSTRAP" -t "$topic" -n 2 -i 20000 > "$WORK/got" || fail "consumer checks failed"
check_delivery "$WORK/ids" "$WORK/got"
expect_eq "messages in topic" "$(wc -l < "$WORK/got")" 2
echo "PASS kafka_driver_oversize"
