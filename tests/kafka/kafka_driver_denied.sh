#!/bin/bash
# A produce request answered TOPIC_AUTHORIZATION_FAILED (injected in an
# in-process mock): its messages complete RETRIABLE (the operator may grant
# the ACL), or PERMANENT with authorization_permanent = true.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" denied -d "$KAFKA_SO" -b unused -t kt.denied || fail "denied scenario (retriable)"
KDRV_WANT_PERMANENT=1 "$KDRV" denied -d "$KAFKA_SO" -b unused -t kt.denied \
    -o authorization_permanent=true || fail "denied scenario (permanent)"
echo "PASS kafka_driver_denied"
