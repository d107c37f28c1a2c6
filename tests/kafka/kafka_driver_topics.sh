#!/bin/bash
# Topic names Kafka cannot have (".", "..", a space, a slash, non-ASCII, 250
# characters) are refused at publish, PERMANENT with the reason; the legal
# ones of the same batch (249 characters among them) are delivered.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" topics -d "$KAFKA_SO" -b "$KAFKA_BOOTSTRAP" -t "kt.topics.$$.$RANDOM" || fail "topics scenario"
echo "PASS kafka_driver_topics"
