#!/bin/bash
# librdkafka's local queue full (queue.buffering.max.messages=10): the rest
# of a batch of 50 is refused UNAVAILABLE (pushback, no attempt), and
# offered again every message is delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" queuefull -d "$KAFKA_SO" -b "$KAFKA_BOOTSTRAP" -t "kt.queuefull.$$.$RANDOM" \
    -p queue.buffering.max.messages=10 || fail "queuefull scenario"
echo "PASS kafka_driver_queuefull"
