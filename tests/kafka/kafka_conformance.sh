#!/bin/bash
# The driver conformance runner against kafka.so and the shared mock cluster.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$OBX_BIN" check-driver kafka -c "$(dirname "$0")/kafka.cfg" -o main --bad-output bad \
    --destination "kt.conformance.$$.$RANDOM" --timeout 60 || fail "check-driver kafka"
echo "PASS kafka_conformance"
