#!/bin/bash
# End to end through MQTT_DRIVER (mqtt_lib.sh; mqtt_e2e, and mosq_e2e with
# fewer events): events enqueued in PostgreSQL, relayed by
# `outbox-relay run --drain` to a private Mosquitto; a QoS 1 subscriber,
# subscribed before the relay starts, must get every event once with its user
# properties (event_id, event_type, aggregate_type, aggregate_id, created_at,
# the row's headers) and each aggregate's events in id order. Duplicates are
# counted, and fail the test beyond MQTT_E2E_DUPLICATES_MAX when it is set.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=${MQTT_E2E_EVENTS:-100000}
AGGS=${MQTT_E2E_AGGREGATES:-10000}
mq_private e2e
fresh_db "${MQ_TEST}_e2e"
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/e2e
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"

# n grows with the id inside each aggregate; the header travels as a user property
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g, 'pad', repeat('x', 100)),
         jsonb_build_object('traceparent', '00-e2e-' || (g % 7), 'tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null
expect_eq "enqueued" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" "$N"

msub_start e2e "$PMQ_URL" 'obx/e2e/#' "$N" -H tenant=acme -T 500 -l 2000
t0=$(date +%s%N)
"$OBX_BIN" run -c "$CFG" --drain >"$PMQ_DIR/relay.log" 2>&1 || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain failed"; }
t1=$(date +%s%N)
msub_wait

expect_eq "published rows" "$(mq_published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "unique events received" "$(msub_field unique)" "$N"
expect_eq "aggregates seen" "$(msub_field aggregates)" "$AGGS"
dups=$(msub_field duplicates)
[ -z "${MQTT_E2E_DUPLICATES_MAX:-}" ] || [ "$dups" -le "$MQTT_E2E_DUPLICATES_MAX" ] ||
    fail "duplicates: $dups, at most $MQTT_E2E_DUPLICATES_MAX"
grep -q 'closed .*: [0-9]* acknowledged' "$PMQ_DIR/relay.log" || fail "no counters line at close"
mq_ran_driver
ms=$(((t1 - t0) / 1000000))
echo "relayed $N events in $ms ms ($((N * 1000 / (ms > 0 ? ms : 1))) events/s); duplicates $dups"
echo "PASS ${MQ_TEST}_e2e"
