#!/bin/bash
# init-db for real teams (issue 49, item 3), once per source
# (SOURCE_MODE=poll|wal|cursor), on a Debezium-style table that already
# holds 100 rows (uuid id, aggregatetype, aggregateid, type, payload):
# - a mapping that gives the relay's order column to the uuid id is refused
#   with the fix, and the application's plain INSERT still works;
# - without --from, init-db refuses and changes nothing;
# - --print-sql prints the SQL and changes nothing, and that SQL, applied
#   with psql, sets the table up as init-db does;
# - --from now: the 100 rows are never sent, the rows written after are
#   (consumer-side count); --from beginning: all 100 wait to be sent (WAL
#   mode refuses it: its slot sees only what commits after it is made).
. "$(dirname "$0")/source_lib.sh" init_db_adopt

# cfg FILE COLUMNS: a memory-driver config on the Debezium table
cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; columns = { $2 }; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; $SOURCE };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF
}
DBZ='event_id = "id"; aggregate_type = "aggregatetype"; aggregate_id = "aggregateid"; event_type = "type";'
cfg "$WORK/broken.cfg" "$DBZ"
cfg "$WORK/relay.cfg" "$DBZ id = \"relay_id\";"
CFG=$WORK/relay.cfg
app_insert() {
    sql "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
         SELECT gen_random_uuid(), 'Order', '$1' || g, 'order.created', '{}' FROM generate_series(1, $2) g"
}
sql "CREATE TABLE outbox (id uuid PRIMARY KEY, aggregatetype text NOT NULL,
       aggregateid text NOT NULL, type text NOT NULL, payload jsonb)" >/dev/null
app_insert old 100 >/dev/null
columns() { sql "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                 WHERE attrelid = 'outbox'::regclass AND attnum > 0 AND NOT attisdropped"; }
BEFORE=$(columns)
unchanged() {
    expect_eq "$1: the table's columns" "$(columns)" "$BEFORE"
    expect_eq "$1: relay objects" "$(sql "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
                                      AND relname NOT IN ('outbox', 'outbox_pkey')")" 0
}

# the order column given to the uuid id: refused with the fix
rc=0
"$OBX_BIN" init-db -c "$WORK/broken.cfg" >"$WORK/broken.out" 2>&1 || rc=$?
expect_eq "exit of init-db with the order column on event_id" "$rc" 1
grep -q 'maps event_id to "id", the relay.s order column' "$WORK/broken.out" ||
    fail "the refusal: $(cat "$WORK/broken.out")"
grep -q 'id = \\"relay_id\\"' "$WORK/broken.out" || grep -q 'id = "relay_id"' "$WORK/broken.out" ||
    fail "the fix is not named: $(cat "$WORK/broken.out")"
unchanged "after the refused mapping"
app_insert old 1 >/dev/null || fail "the application's INSERT after the refused mapping"

# rows and no --from: refused, nothing changed
rc=0
"$OBX_BIN" init-db -c "$CFG" >"$WORK/ask.out" 2>&1 || rc=$?
expect_eq "exit of init-db without --from" "$rc" 1
grep -q "already holds rows and init-db never set it up: .*--from now .*--from beginning" "$WORK/ask.out" ||
    fail "the refusal without --from: $(cat "$WORK/ask.out")"
unchanged "after init-db without --from"
rc=0
"$OBX_BIN" init-db -c "$CFG" --from later >"$WORK/bad.out" 2>&1 || rc=$?
expect_eq "exit of init-db --from later" "$rc" 2

# --print-sql: the SQL, nothing changed; applied, it is init-db's work
"$OBX_BIN" init-db -c "$CFG" --from now --print-sql >"$WORK/install.sql" 2>"$WORK/print.err" ||
    fail "init-db --print-sql: $(cat "$WORK/print.err")"
unchanged "after --print-sql"
grep -q "^ALTER TABLE .*relay_id" "$WORK/install.sql" || fail "no ALTER TABLE in: $(head -20 "$WORK/install.sql")"
grep -q "^UPDATE .*published_at" "$WORK/install.sql" || fail "--from now's UPDATE is not printed"
if [ "$MODE" = wal ]; then
    grep -q "pg_create_logical_replication_slot('$TEST_DB', 'pgoutput');" "$WORK/install.sql" ||
        fail "the slot is not printed"
    expect_eq "slots after --print-sql" "$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" 0
    rc=0
    "$OBX_BIN" init-db -c "$CFG" --from beginning >"$WORK/beginning.out" 2>&1 || rc=$?
    expect_eq "exit of init-db --from beginning in WAL mode" "$rc" 2
    grep -q "WAL mode sends the rows committed after its slot is made" "$WORK/beginning.out" ||
        fail "--from beginning in WAL mode: $(cat "$WORK/beginning.out")"
fi
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f "$WORK/install.sql" >/dev/null 2>"$WORK/apply.err" ||
    fail "the printed SQL did not apply: $(cat "$WORK/apply.err")"
expect_eq "pending after the printed --from now" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
# init-db after it: set up already, nothing to ask
"$OBX_BIN" init-db -c "$CFG" >"$WORK/again.out" 2>&1 || fail "init-db after the printed SQL: $(cat "$WORK/again.out")"
"$OBX_BIN" check-config -c "$CFG" --connect >"$WORK/check.out" 2>&1 || fail "check-config --connect: $(cat "$WORK/check.out")"

# the application writes 10 more: exactly those are sent
app_insert new 10 >/dev/null
start_relay "$CFG" "$WORK/relay.log"
for ((i = 0; i < 300; i++)); do # a liveness bound of 60 s
    [ -f "$REC" ] && [ "$(grep -c '"status":"ok"' "$REC")" -ge 10 ] && break
    sleep 0.2
done
stop_relay "$RELAY_PID" 60
load_record
expect_eq "events sent" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 10
expect_eq "old events sent" "$(sql "SELECT count(*) FROM r WHERE aggregate_id LIKE 'old%'")" 0

# --from beginning on a second such table (poll and cursor): every old row waits
if [ "$MODE" != wal ]; then
    sql "CREATE SCHEMA b; CREATE TABLE b.outbox (id uuid PRIMARY KEY, aggregatetype text NOT NULL,
           aggregateid text NOT NULL, type text NOT NULL, payload jsonb);
         INSERT INTO b.outbox (id, aggregatetype, aggregateid, type, payload)
         SELECT gen_random_uuid(), 'Order', 'b' || g, 'order.created', '{}' FROM generate_series(1, 50) g" >/dev/null
    sed 's/columns = {/schema = "b"; columns = {/' "$CFG" >"$WORK/b.cfg"
    "$OBX_BIN" init-db -c "$WORK/b.cfg" --from beginning >"$WORK/b.out" 2>&1 || fail "init-db --from beginning: $(cat "$WORK/b.out")"
    "$OBX_BIN" status -c "$WORK/b.cfg" --json >"$WORK/b.json" || fail "status after --from beginning"
    grep -q '"pending": *50' "$WORK/b.json" || fail "pending after --from beginning: $(cat "$WORK/b.json")"
fi
echo "init-db adoption ($MODE): refused mapping, --from asked, --print-sql applied, only new rows sent"
