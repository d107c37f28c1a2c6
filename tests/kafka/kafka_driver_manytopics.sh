#!/bin/bash
# One message to each of MANY_TOPICS (3,000) distinct topics of a private
# mock: all delivered, across the producer replacements that bound
# librdkafka's per-topic memory (every 1,024 topics, when nothing is in
# flight). Prints the harness's resident memory before and after (a figure:
# under AddressSanitizer it is inflated; README has the release build's).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

kmock_start
"$KDRV" manytopics -d "$KAFKA_SO" -b "$KM_BOOTSTRAP" -t kt.many -n "${MANY_TOPICS:-3000}" \
    2> "$WORK/err" || { tail -20 "$WORK/err"; fail "manytopics scenario"; }
grep "^manytopics:" "$WORK/err"
echo "PASS kafka_driver_manytopics"
