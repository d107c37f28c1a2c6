#!/bin/bash
# The relay end to end: E2E_EVENTS events (default 100,000) over 1000
# aggregates through `outbox-relay run --drain` into a private mock cluster
# (a 12-partition topic: the mock keeps only ~5 MB per partition); a consumer
# reading while the relay produces gets every event id, the right keys and
# headers, and each aggregate's events in id order within its partition.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

events=${E2E_EVENTS:-100000}
aggregates=1000
topic=kt.e2e
kmock_start "$topic:12"
fresh_db kt_e2e
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 2
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

t0=$SECONDS
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $aggregates), 'order.created',
         jsonb_build_object('n', g, 'pad', repeat('x', 50)),
         jsonb_build_object('seq', g::text, 'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')))
     FROM generate_series(1, $events) g" >/dev/null
sql "SELECT event_id FROM outbox" > "$WORK/ids"
note "enqueued $events events in $((SECONDS - t0)) s"

# columns: partition offset key event_id seq traceparent event_type
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$events" -i 120000 -k -h seq -h traceparent -h event_type \
    > "$WORK/got" 2> "$WORK/consumer.err" &
consumer=$!

t0=$SECONDS
timeout 1700 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2> "$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
secs=$((SECONDS - t0))
note "relay drained $events events in $secs s ($((events / (secs > 0 ? secs : 1))) events/s); $(tail -1 "$WORK/relay.log")"

wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
cat "$WORK/consumer.err" >&2
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$events"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
check_delivery "$WORK/ids" "$WORK/got"
# At least once: a duplicate is allowed (a worker whose lease ran out before
# it recorded its acknowledged batch), counted and shown, not a failure.
lost=$(grep -c "lease lost" "$WORK/relay.log" || true)
[ "$DUPS" = 0 ] || note "DUPLICATES: $DUPS event ids delivered more than once; relay log: $(grep -m3 "lease lost" "$WORK/relay.log" | tr '\n' ' ')"
expect_eq "traceparent" "$(cut -f6 "$WORK/got" | sort -u)" "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
expect_eq "event_type" "$(cut -f7 "$WORK/got" | sort -u)" "order.created"
# order: each aggregate's first deliveries in id (seq) order within its partition
awk -F'\t' '!seen[$4]++' "$WORK/got" > "$WORK/first"
check_order "$WORK/first" 5 3
expect_eq "partitions used" "$(cut -f1 "$WORK/got" | sort -u | wc -l)" 12
echo "PASS kafka_e2e ($events events in ${secs} s, $DUPS duplicates, $lost lease-lost warnings)"
