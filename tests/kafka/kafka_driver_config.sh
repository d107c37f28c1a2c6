#!/bin/bash
# Bad properties and options are refused at create with an error naming them.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

"$KDRV" badprop -d "$KAFKA_SO" -b "$KAFKA_BOOTSTRAP" || fail "badprop scenario"
echo "PASS kafka_driver_config"
