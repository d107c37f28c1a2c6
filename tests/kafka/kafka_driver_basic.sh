#!/bin/bash
# kafka.so through the harness against the shared mock: batches of 0, 1, many,
# two instances at once; a consumer reads everything back: ids, keys, headers, order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.basic.$$.$RANDOM
"$KDRV" basic -d "$KAFKA_SO" -b "$KAFKA_BOOTSTRAP" -t "$topic" -n 5000 -e "$WORK/ids" || fail "harness"
expect_eq "acknowledged ids" "$(wc -l < "$WORK/ids")" 5010
# columns: partition offset key event_id seq traceparent
"$KCONSUME" -b "$KAFKA_BOOTSTRAP" -t "$topic" -n 5010 -i 10000 -k -h seq -h traceparent > "$WORK/got" \
    || fail "consumer checks failed"
check_delivery "$WORK/ids" "$WORK/got"
expect_eq duplicates "$DUPS" 0
expect_eq "traceparent passed through" "$(cut -f6 "$WORK/got" | sort -u)" \
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
# group by partition, key (aggregate) and the run's instance (2nd uuid group)
awk -F'\t' -v OFS='\t' '{ split($4, u, "-"); print $0, u[2] }' "$WORK/got" > "$WORK/got.inst"
check_order "$WORK/got.inst" 5 3,7
echo "PASS kafka_driver_basic"
