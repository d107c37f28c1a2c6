#!/bin/bash
# A jsonb payload whose text form passes PostgreSQL's 1 GB (180 MB of
# control characters, each written \u0001 as text: about 1.1 GB; a few MB
# stored) cannot stop the claims (issue 29): measuring it as text fails, and
# the claim used to fail with it, every time, so nothing after it was
# published. Now it is dead-lettered as over max_payload_bytes (its size given
# as 1 GB, what its text passed) and the 100 events around it are published.
ENG_TEST=huge_text
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_huge_text
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 10; max_payload_bytes = 16777216;" ""
init_db "$WORK/relay.cfg"
SMALL="SELECT count(outbox_enqueue('Order', 'agg-' || (g % 10), 'order.created',
           jsonb_build_object('n', g))) FROM generate_series(1, 50) g"
sql "$SMALL" >/dev/null
sql "SELECT outbox_enqueue('Order', 'agg-3', 'order.huge',
         jsonb_build_object('pad', repeat(chr(1), 180 * 1024 * 1024)))" >/dev/null
sql "$SMALL" >/dev/null
note "huge row: $(sql "SELECT pg_size_pretty(pg_column_size(payload)::bigint) || ' stored' FROM outbox WHERE event_type = 'order.huge'")"
OUT=$(psql -qAt -d "$TEST_DB" -c "SELECT octet_length(payload::text) FROM outbox WHERE event_type = 'order.huge'" 2>&1) &&
    fail "the huge row's text fits after all ($OUT bytes): the test proves nothing"
note "its text form: $OUT"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) = 100
          AND count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL) = 0 FROM outbox" t 180
stop_relay "$RELAY_PID" 30
expect_eq "huge row: dead" \
    "$(sql "SELECT dead_at IS NOT NULL AND published_at IS NULL FROM outbox WHERE event_type = 'order.huge'")" t
LAST_ERROR=$(sql "SELECT last_error FROM outbox WHERE event_type = 'order.huge'")
note "huge row last_error: $LAST_ERROR"
expect_eq "huge row: last_error" "$LAST_ERROR" "payload of 1073741824 bytes exceeds max_payload_bytes (16777216)"
load_record
expect_eq "broker log lines for the huge row" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.event_type = 'order.huge'")" 0
grep -qiE "out of memory|alloc request" "$WORK/relay.log" && fail "a claim failed: $(grep -iE -m1 'out of memory|alloc request' "$WORK/relay.log")"
echo "PASS: engine_huge_text_payload"
