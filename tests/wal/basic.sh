#!/bin/bash
# WAL mode, the basics: init-db makes the publication, slot, dead-letter table
# and outbox_emit(); `run --drain` relays every committed insert, the rows a
# transaction inserted and deleted again, and outbox_emit() events, each with
# an "ok" line in the broker log; a rolled-back transaction is never published;
# the outbox rows are never written by the relay (no write per event); in
# commit order per aggregate; and once confirmed, a second run publishes
# nothing again.
ENG_TEST=walbasic
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_basic
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 2; threaded = true;"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init.out" 2>&1 || fail "init-db: $(cat "$WORK/init.out")"
grep -q "replication slot $TEST_DB created" "$WORK/init.out" || fail "init-db did not create the slot: $(cat "$WORK/init.out")"
expect_eq "publication, inserts only" \
    "$(sql "SELECT pubinsert AND NOT pubupdate AND NOT pubdelete FROM pg_publication WHERE pubname = '$TEST_DB'")" t
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init2.out" 2>&1 || fail "init-db is not idempotent: $(cat "$WORK/init2.out")"

enqueue_bulk 2000 100
sql "CREATE TABLE emitted (event_id uuid, aggregate_id text)"
sql "CREATE TABLE deleted_rows (event_id uuid, aggregate_id text)"
# rolled back: never published
sql "BEGIN; SELECT outbox_enqueue('Order', 'rb-' || g, 'order.rolled_back', '{}'::jsonb) FROM generate_series(1, 50) g;
     SELECT outbox_emit('Order', 'rb-emit', 'order.rolled_back', '{}'::jsonb); ROLLBACK;" >/dev/null
# the empty-table pattern: insert and delete in one transaction
sql "BEGIN;
     WITH i AS (INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
                SELECT 'Order', 'gone-' || (g % 3), 'order.gone', jsonb_build_object('g', g)
                FROM generate_series(1, 30) g RETURNING event_id, aggregate_id)
     INSERT INTO deleted_rows SELECT * FROM i;
     DELETE FROM outbox WHERE event_type = 'order.gone';
     COMMIT;" >/dev/null
# no row at all: outbox_emit
sql "INSERT INTO emitted SELECT outbox_emit('Order', 'emit-' || (g % 2), 'order.emitted',
         jsonb_build_object('g', g), '{\"trace\": \"t1\"}'::jsonb), 'emit-' || (g % 2) FROM generate_series(1, 20) g" >/dev/null
enqueue_bulk 500 100 order.after

drain "$WORK/relay.cfg" "$WORK/relay.log" 120
load_record
sql "DROP TABLE IF EXISTS ev; CREATE TABLE ev AS
     SELECT event_id, aggregate_id, id AS n FROM outbox
     UNION ALL SELECT event_id, aggregate_id, 1000000 + row_number() OVER () FROM deleted_rows
     UNION ALL SELECT event_id, aggregate_id, 2000000 + row_number() OVER () FROM emitted"
expect_eq "expected events" "$(sql "SELECT count(*) FROM ev")" 2550
check_wal_published
check_wal_order
expect_eq "rolled-back events published" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'event_type' = 'order.rolled_back'")" 0
expect_eq "outbox rows written by the relay" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL OR lease_owner IS NOT NULL OR attempts > 0")" 0
expect_eq "emitted events routed like rows" \
    "$(sql "SELECT count(*) FROM r JOIN emitted USING (event_id) WHERE r.destination = 'outbox.Order' AND r.status = 'ok'")" 20
DUPS=$(dup_count)
expect_eq "duplicates without a crash" "$DUPS" 0

# confirmed means confirmed: nothing comes again
LINES=$(record_lines)
drain "$WORK/relay.cfg" "$WORK/relay2.log" 60
expect_eq "record lines after a second run" "$(record_lines)" "$LINES"
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.out" || fail "status failed"
grep -q "dead: *0" "$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"
check_logs_clean
echo "PASS wal basic: 2550 events (30 inserted and deleted, 20 emitted), 0 rolled back published, confirmed at $(slot_confirmed)"
