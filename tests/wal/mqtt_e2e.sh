#!/bin/bash
# WAL mode end to end with MQTT: 20,000 events over 1,000 aggregates (one in
# ten through outbox_emit) relayed by `run --drain` from the slot to
# Mosquitto; a QoS 1 subscriber, subscribed before the relay starts, gets
# every event with its user properties and each aggregate's events in order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../mqtt/mqtt_lib.sh"
. "$(dirname "$0")/walmode.sh"

N=${E2E_EVENTS:-20000}
AGGS=1000
mq_private wal-e2e "${WAL_MQTT_PORT:-}"
fresh_wal_db mqtt_wal
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/wal
to_wal_mode "$CFG"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
enqueue_wal_mix "$N" "$AGGS" "jsonb_build_object('traceparent', '00-e2e-' || (g % 7), 'tenant', 'acme')"
msub_start wal-e2e "$PMQ_URL" 'obx/wal/#' "$N" -H tenant=acme -T 500 -l 2000
t0=$SECONDS
"$OBX_BIN" run -c "$CFG" --drain >"$PMQ_DIR/relay.log" 2>&1 || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain failed"; }
secs=$((SECONDS - t0))
msub_wait
expect_eq "unique events received" "$(msub_field unique)" "$N"
expect_eq "aggregates seen" "$(msub_field aggregates)" "$AGGS"
drop_wal_slots
echo "PASS wal mqtt_e2e ($N events in $secs s, duplicates $(msub_field duplicates))"
