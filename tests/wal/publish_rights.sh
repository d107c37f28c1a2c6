#!/bin/bash
# WAL mode: only writers of the outbox can publish. A role with LOGIN only is
# refused by INSERT and by outbox_emit, and its pg_logical_emit_message with
# the relay's prefix (which the server lets any role send) is ignored with a
# warning, never published. A role granted INSERT on the outbox publishes by
# INSERT and by outbox_emit, whose row is gone again at commit. With
# relay.wal.accept_logical_messages = true the same forged message is an
# event: the opt-in is what the first run refused.
ENG_TEST=walrights
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_rights
INTRUDER=${TEST_DB}_login
WRITER=${TEST_DB}_writer
drop_roles() {
    psql -qAt -d postgres -c "DROP ROLE IF EXISTS $INTRUDER" -c "DROP ROLE IF EXISTS $WRITER" >/dev/null
}
eng_extra_cleanup() {
    [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null 2>&1 || true
    drop_roles 2>/dev/null || true
}
drop_roles
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
psql -qAt -d postgres -c "CREATE ROLE $INTRUDER LOGIN" -c "CREATE ROLE $WRITER LOGIN" >/dev/null
sql "GRANT INSERT ON outbox TO $WRITER" >/dev/null
as_role() { psql -qAt -v ON_ERROR_STOP=1 -U "$1" -d "$TEST_DB" -c "$2" 2>&1; }

FORGED="SELECT pg_logical_emit_message(true, 'outbox-relay:public.outbox',
  json_build_object('event_id', gen_random_uuid(), 'aggregate_type', 'Payment', 'aggregate_id', 'p-1',
    'event_type', 'payment.approved', 'payload', '{\"amount\": 1000000}', 'destination', 'payments.approved',
    'created_at_us', 1)::text)"
OUT=$(as_role "$INTRUDER" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
                           VALUES ('Payment', 'p-1', 'payment.inserted', '{}')") &&
    fail "a LOGIN-only role inserted into the outbox: $OUT"
echo "$OUT" | grep -q "permission denied" || fail "INSERT refused for another reason: $OUT"
OUT=$(as_role "$INTRUDER" "SELECT outbox_emit('Payment', 'p-1', 'payment.emitted', '{}'::jsonb)") &&
    fail "a LOGIN-only role called outbox_emit: $OUT"
echo "$OUT" | grep -q "permission denied" || fail "outbox_emit refused for another reason: $OUT"
# the server lets every role send a logical message: the relay must not trust it
as_role "$INTRUDER" "$FORGED" >/dev/null || fail "pg_logical_emit_message was refused: the test proves nothing"

OUT=$(as_role "$WRITER" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
                   VALUES ('Order', 'w-1', 'writer.inserted', '{}')") || fail "the writer's INSERT failed: $OUT"
OUT=$(as_role "$WRITER" "SELECT outbox_emit('Order', 'w-1', 'writer.emitted', '{\"n\": 2}'::jsonb)") ||
    fail "the writer's outbox_emit failed: $OUT"
EMITTED=$OUT
expect_eq "outbox_emit's row left in the table" \
    "$(sql "SELECT count(*) FROM outbox WHERE event_type = 'writer.emitted'")" 0
enqueue_bulk 50 5 order.after

drain "$WORK/relay.cfg" "$WORK/relay.log" 120
load_record
expect_eq "events published from the LOGIN-only role" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'event_type' LIKE 'payment.%'")" 0
expect_eq "the writer's events published" \
    "$(sql "SELECT count(DISTINCT j->>'event_type') FROM rec WHERE j->>'status' = 'ok' AND j->>'event_type' LIKE 'writer.%'")" 2
expect_eq "the emitted event's id" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'status' = 'ok' AND j->>'event_id' = '$EMITTED'")" 1
expect_eq "events after the forged message" \
    "$(sql "SELECT count(DISTINCT j->>'event_id') FROM rec WHERE j->>'status' = 'ok' AND j->>'event_type' = 'order.after'")" 50
grep -q "ignored a logical message with the relay's prefix.*1 so far" "$WORK/relay.log" ||
    fail "no warning for the ignored message: $(tail -5 "$WORK/relay.log")"

# opted in: the same message is an event
WAL_OPTS="accept_logical_messages = true;" write_wal_cfg "$WORK/trusting.cfg" "" "delay_ms = 1;"
as_role "$INTRUDER" "$FORGED" >/dev/null || fail "pg_logical_emit_message was refused"
drain "$WORK/trusting.cfg" "$WORK/trusting.log" 120
load_record
expect_eq "the accepted message published" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'status' = 'ok' AND j->>'event_type' = 'payment.approved'")" 1
grep -q "ignored a logical message" "$WORK/trusting.log" && fail "an accepted message was ignored"
drop_wal_slots
echo "PASS: wal_publish_rights"
