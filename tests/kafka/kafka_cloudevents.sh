#!/bin/bash
# CloudEvents on Kafka (issue 30): one run, a binary-mode output and a
# structured-mode one into a private mock cluster; kcat dumps every message
# with its headers and the CloudEvents SDK for JavaScript parses and checks
# each against the rows enqueued (ce_check.js). With CE_SOURCE=wal the same
# through WAL mode (wal_kafka_cloudevents): the format is the delivery core's
# message shaped by the driver, whichever source feeds it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"
. "$OBX_SRC/tests/cloudevents/ce_lib.sh"

kmock_start ce.bin:2 ce.str:2
if [ "${CE_SOURCE:-poll}" = wal ]; then
    . "$OBX_SRC/tests/wal/walmode.sh"
    fresh_wal_db obx_ce_kafka_wal
    trap 'drop_wal_slots; cleanup' EXIT
else
    fresh_db obx_ce_kafka
fi
ce_cfg "$WORK/relay.cfg" kafka "bootstrap_servers = \"$KM_BOOTSTRAP\";" ce.bin ce.str
[ "${CE_SOURCE:-poll}" = poll ] || to_wal_mode "$WORK/relay.cfg"
ce_run "$WORK/relay.cfg"
for mode in bin str; do
    timeout 60 kcat -C -b "$KM_BOOTSTRAP" -t "ce.$mode" -o beginning -e -J -q > "$WORK/$mode.json" ||
        fail "kcat could not read ce.$mode"
done
ce_check kafka binary "$WORK/bin.json"
ce_check kafka structured "$WORK/str.json"
echo "PASS kafka_cloudevents (${CE_SOURCE:-poll} mode)"
