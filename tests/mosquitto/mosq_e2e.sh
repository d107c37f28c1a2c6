#!/bin/bash
# End to end through driver = "mosquitto": events enqueued in PostgreSQL,
# relayed by `outbox-relay run --drain` to a private Mosquitto; a QoS 1
# subscriber (msub), subscribed before the relay starts, must get every
# event once with its user properties (event_id, event_type, aggregate_type,
# aggregate_id, created_at, the row's headers) and each aggregate's events
# in id order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mosq_lib.sh"

N=${MOSQ_E2E_EVENTS:-5000}
AGGS=${MOSQ_E2E_AGGREGATES:-200}
mq_private mosq_e2e
fresh_db mosq_e2e
CFG=$PMQ_DIR/relay.cfg
mosq_relay_cfg "$CFG" "$PMQ_URL" obx/mosq
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"

# n grows with the id inside each aggregate; the header travels as a user property
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g, 'pad', repeat('x', 100)),
         jsonb_build_object('traceparent', '00-e2e-' || (g % 7), 'tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null
expect_eq "enqueued" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" "$N"

msub_start mosq_e2e "$PMQ_URL" 'obx/mosq/#' "$N" -H tenant=acme -T 300 -l 2000
"$OBX_BIN" run -c "$CFG" --drain >"$PMQ_DIR/relay.log" 2>&1 || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain failed"; }
msub_wait

expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "unique events received" "$(msub_field unique)" "$N"
expect_eq "aggregates seen" "$(msub_field aggregates)" "$AGGS"
expect_eq "duplicates" "$(msub_field duplicates)" 0
grep -q 'closed .*: [0-9]* acknowledged' "$PMQ_DIR/relay.log" || fail "no counters line at close"
grep -q '(mosquitto)' "$PMQ_DIR/relay.log" || { grep -m3 'closed ' "$PMQ_DIR/relay.log"; fail "the output did not run the mosquitto driver"; }
echo "PASS mosq_e2e"
