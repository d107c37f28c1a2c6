#!/bin/bash
# WAL mode end to end with Kafka: 20,000 events over 1,000 aggregates (one in
# ten through outbox_emit, with no row) relayed by `run --drain` from the slot
# into a private mock cluster; a consumer reading while the relay produces
# gets every event id once or more, the keys and headers, and each
# aggregate's events in order within its partition.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../kafka/kafka_lib.sh"
. "$(dirname "$0")/walmode.sh"

events=${E2E_EVENTS:-20000}
topic=kt.wal
kmock_start "$topic:12"
fresh_wal_db kt_wal
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 1
to_wal_mode "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue_wal_mix "$events" 1000 "jsonb_build_object('seq', g::text, 'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')"
expect_eq "rows in the table" "$(sql "SELECT count(*) FROM outbox")" $((events * 9 / 10))
# the expected ids: the rows' and the emitted ones' (seq = g = the payload's n)
sql "SELECT event_id FROM outbox" > "$WORK/ids"

# columns: partition offset key event_id seq traceparent event_type
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$events" -i 120000 -k -h seq -h traceparent -h event_type \
    > "$WORK/got" 2> "$WORK/consumer.err" &
consumer=$!
t0=$SECONDS
timeout 900 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2> "$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
secs=$((SECONDS - t0))
wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
check_delivery "$WORK/ids" "$WORK/got"
expect_eq "events consumed (rows and emitted)" "$(cut -f4 "$WORK/got" | sort -u | wc -l)" "$events"
expect_eq "seq values consumed" "$(cut -f5 "$WORK/got" | sort -un | wc -l)" "$events"
expect_eq "traceparent" "$(cut -f6 "$WORK/got" | sort -u)" "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
expect_eq "event_type" "$(cut -f7 "$WORK/got" | sort -u)" "order.created"
awk -F'\t' '!seen[$4]++' "$WORK/got" > "$WORK/first"
check_order "$WORK/first" 5 3
expect_eq "outbox rows written by the relay" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 0
drop_wal_slots
echo "PASS wal kafka_e2e ($events events in ${secs} s, $DUPS duplicates)"
