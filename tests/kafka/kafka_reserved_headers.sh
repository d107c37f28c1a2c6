#!/bin/bash
# A row's headers cannot shadow the relay's (issue 54): rows whose headers
# name event_id, aggregate_id (and aggregate_seq, content_type, ce_id) beside
# one of their own reach a Kafka consumer (kconsume, a private mock cluster)
# with exactly one header of each of the relay's names, holding the relay's
# values, and the row's own header intact; the relay logs the drop once.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

topic=kt.reserved
kmock_start "$topic:2"
fresh_db kt_reserved
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 1
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || g, 'order.created', jsonb_build_object('n', g),
       jsonb_build_object('event_id', '11111111-1111-1111-1111-111111111111', 'aggregate_id', '999',
                          'aggregate_seq', '42', 'content_type', 'text/evil', 'ce_id', 'forged',
                          'trace', 't' || g)))
     FROM generate_series(1, 5) g" >/dev/null
timeout 120 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
# columns: partition offset key event_id, then every value of each header
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n 5 -i 20000 -a -h event_id -h aggregate_id \
    -h aggregate_seq -h content_type -h ce_id -h trace >"$WORK/got" 2>"$WORK/consumer.err" ||
    { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
sql "CREATE TABLE got (part int, off bigint, key text, last_event_id text, event_id text, aggregate_id text,
       aggregate_seq text, content_type text, ce_id text, trace text)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\copy got FROM '$WORK/got'" || fail "loading what was consumed"
expect_eq "messages" "$(sql "SELECT count(DISTINCT event_id) FROM got")" 5
expect_eq "messages whose event_id headers are not exactly the row's event id" \
    "$(sql "SELECT count(*) FROM got g WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id::text = g.event_id)")" 0
expect_eq "messages whose aggregate_id headers are not exactly the row's" \
    "$(sql "SELECT count(*) FROM got g WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id::text = g.event_id
             AND o.aggregate_id = g.aggregate_id AND o.aggregate_id = g.key)")" 0
expect_eq "aggregate_seq, content_type, ce_id headers (the relay's only)" \
    "$(sql "SELECT string_agg(DISTINCT aggregate_seq || ' ' || content_type || ' ' || ce_id, ',') FROM got")" \
    "1 application/json -"
expect_eq "the row's own header" "$(sql "SELECT count(*) FROM got WHERE trace ~ '^t[1-5]$'")" 5
expect_eq "drop logs" "$(grep -c 'is one the relay sets: dropped' "$WORK/relay.log")" 1
echo "PASS kafka_reserved_headers (5 events: one event_id, aggregate_id, aggregate_seq, content_type header each, the relay's; ce_id none)"
