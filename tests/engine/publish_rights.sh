#!/bin/bash
# Poll mode: only writers of the outbox can publish. A role with LOGIN only
# is refused by INSERT and by outbox_enqueue, and a logical message with the
# WAL mode prefix (open to every role) publishes nothing; a role granted
# INSERT on the outbox, and nothing else, publishes by INSERT and by
# outbox_enqueue.
ENG_TEST=rights
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_rights
INTRUDER=${TEST_DB}_login
WRITER=${TEST_DB}_writer
drop_roles() {
    psql -qAt -d postgres -c "DROP ROLE IF EXISTS $INTRUDER" -c "DROP ROLE IF EXISTS $WRITER" >/dev/null
}
eng_extra_cleanup() {
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null 2>&1 || true
    drop_roles 2>/dev/null || true
}
drop_roles
write_cfg "$WORK/relay.cfg" "" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
psql -qAt -d postgres -c "CREATE ROLE $INTRUDER LOGIN" -c "CREATE ROLE $WRITER LOGIN" >/dev/null
sql "GRANT INSERT ON outbox TO $WRITER" >/dev/null
as_role() { psql -qAt -v ON_ERROR_STOP=1 -U "$1" -d "$TEST_DB" -c "$2" 2>&1; }

OUT=$(as_role "$INTRUDER" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
                           VALUES ('Payment', 'p-1', 'payment.inserted', '{}')") &&
    fail "a LOGIN-only role inserted into the outbox: $OUT"
echo "$OUT" | grep -q "permission denied" || fail "INSERT refused for another reason: $OUT"
OUT=$(as_role "$INTRUDER" "SELECT outbox_enqueue('Payment', 'p-1', 'payment.enqueued', '{}'::jsonb)") &&
    fail "a LOGIN-only role called outbox_enqueue: $OUT"
echo "$OUT" | grep -q "permission denied" || fail "outbox_enqueue refused for another reason: $OUT"
as_role "$INTRUDER" "SELECT pg_logical_emit_message(true, 'outbox-relay:public.outbox',
    json_build_object('event_id', gen_random_uuid(), 'aggregate_type', 'Payment', 'aggregate_id', 'p-1',
      'event_type', 'payment.approved', 'payload', '{}')::text)" >/dev/null ||
    fail "pg_logical_emit_message was refused"

OUT=$(as_role "$WRITER" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
                         VALUES ('Order', 'w-1', 'writer.inserted', '{}')") || fail "the writer's INSERT failed: $OUT"
OUT=$(as_role "$WRITER" "SELECT outbox_enqueue('Order', 'w-1', 'writer.enqueued', '{}'::jsonb)") ||
    fail "the writer's outbox_enqueue failed: $OUT"
expect_eq "outbox_enqueue's event_id" "$(sql "SELECT count(*) FROM outbox WHERE event_id = '$OUT'")" 1

drain "$WORK/relay.cfg" "$WORK/relay.log" 60
load_record
expect_eq "events published from the LOGIN-only role" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'event_type' LIKE 'payment.%'")" 0
expect_eq "the writer's events published" \
    "$(sql "SELECT count(DISTINCT j->>'event_type') FROM rec WHERE j->>'status' = 'ok' AND j->>'event_type' LIKE 'writer.%'")" 2
expect_eq "rows published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 2
echo "PASS: engine_publish_rights"
