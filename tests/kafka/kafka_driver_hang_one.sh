#!/bin/bash
# One hung broker of three (an in-process mock whose broker 1, leader of two
# of the topic's six partitions, delays every answer by an hour) for 25 s
# (KDRV_HANG_MS; 2.5 times the 10 s message timeout it sets) under a steady
# stream: librdkafka never finds all brokers down, yet no message completes
# RETRIABLE or PERMANENT (timeouts are pushback: UNAVAILABLE); after the
# broker answers again every message is acknowledged and the consumer finds
# every event (duplicates counted).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.hang1
KDRV_CONSUME_TO="$WORK/got" KDRV_HANG_MS=${KDRV_HANG_MS:-25000} "$KDRV" hang -d "$KAFKA_SO" -b unused \
    -t "$topic" -n "${HANG_EVENTS:-20000}" -o message_timeout_ms=10000 -e "$WORK/ids" "$@" 2> "$WORK/err" || { tail -30 "$WORK/err"; fail "hang scenario (one broker)"; }
grep "^hang:" "$WORK/err"
expect_eq "acknowledged" "$(wc -l < "$WORK/ids")" "${HANG_EVENTS:-20000}"
check_delivery "$WORK/ids" "$WORK/got"
echo "PASS kafka_driver_hang_one ($DUPS duplicates)"
