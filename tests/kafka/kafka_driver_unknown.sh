#!/bin/bash
# Events to a topic the cluster says it does not have (an in-process mock
# answering UNKNOWN_TOPIC_OR_PART for it) fail RETRIABLE on their own, in
# about librdkafka's topic.metadata.propagation.max.ms (the driver's 1 s),
# while the other events of the batch are delivered; the next batch's events
# to that topic are refused at publish; once the topic answers, they are
# delivered. Prints how long each part took (figures, not asserted).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" unknown -d "$KAFKA_SO" -b unused -t kt.known || fail "unknown scenario"
echo "PASS kafka_driver_unknown"
