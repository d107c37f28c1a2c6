#!/bin/bash
# Unreachable bootstrap: create does not block, messages complete RETRIABLE
# after message_timeout_ms (no hang, no crash); close aborts in-flight messages.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

# a port nobody listens on: bind one, read it, release it
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$KDRV" abort -d "$KAFKA_SO" -b "127.0.0.1:$port" -n 500 || fail "abort scenario"
"$KDRV" timeout -d "$KAFKA_SO" -b "127.0.0.1:$port" -n 50 -o message_timeout_ms=1500 || fail "timeout scenario"
echo "PASS kafka_driver_abort"
