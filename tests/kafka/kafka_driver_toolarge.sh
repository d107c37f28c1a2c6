#!/bin/bash
# A produce request answered MSG_SIZE_TOO_LARGE (injected in an in-process
# mock): its 33 small messages complete UNAVAILABLE (the output's state, no
# attempt), none PERMANENT, and offered again they are sent one per batch and
# delivered; a message the broker refuses alone is PERMANENT with its size.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" toolarge -d "$KAFKA_SO" -b unused -t kt.large || fail "toolarge scenario"
echo "PASS kafka_driver_toolarge"
