#!/bin/bash
# Brokers of a private mock cluster go down for 1.5 s under a steady stream:
# the driver logs once that the output is down and once that it is back, and
# every message is acknowledged in the end. Prints how long deliveries
# stopped (a figure, not asserted). probe says OK, UNAVAILABLE while the
# brokers are down, OK again once they are back.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.recover
kmock_start "$topic:6"
"$KDRV" recover -d "$KAFKA_SO" -b "$KM_BOOTSTRAP" -t "$topic" -n 60000 -K "$KM_PID" "$@" \
    2> "$WORK/err" || { tail -30 "$WORK/err"; fail "recover scenario"; }
grep "^recover:" "$WORK/err"
expect_eq "'down' log lines" "$(grep -c 'all brokers are down' "$WORK/err")" 1
expect_eq "'back' log lines" "$(grep -c 'brokers are reachable again' "$WORK/err")" 1
"$KDRV" probe -d "$KAFKA_SO" -b "$KM_BOOTSTRAP" -K "$KM_PID" 2> "$WORK/probe.err" \
    || { cat "$WORK/probe.err"; fail "probe scenario"; }
echo "PASS kafka_driver_recover"
