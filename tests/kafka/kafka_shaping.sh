#!/bin/bash
# Messages shaped from config, through Kafka (issue 30). First, adopting a
# Debezium outbox table unchanged: two tables the
# relay did not make, filled by plain INSERTs, relayed after init-db has
# added only what the relay owns, with compat = "debezium" into a private
# mock cluster. The first has the shape Debezium's EventRouter expects (id
# uuid, aggregatetype, aggregateid, type, payload); the second the minimal
# one (id uuid, message_type, payload, created_at, published_at: no
# aggregate, so each event type is one). kcat reads every message back and
# each is compared field by field with what EventRouter's defaults give:
# topic outbox.event.<aggregatetype>, key aggregateid, one header "id" (the
# row's id), the payload as the value, with timestamp = "created_at" the
# row's time as the record's. The rows' own columns are unchanged. Then a
# route that shapes the row's headers: drops internal-*, renames
# traceparent, sets source from a template and tenant over the row's own.
# Then the key and partition from templates over each message's fields, and
# tombstones: rows with a NULL payload as null values, in order with the
# others; a template giving no partition number dead-letters that event; bad
# templates and tombstones for a driver without them refused at start.
# With DBZ_SOURCE=wal (wal_kafka_shaping) the same through WAL mode, where
# the rows are inserted after init-db (the slot starts there) and the
# EventRouter table's rows are deleted in the transaction that inserted
# them, as applications written for Debezium do: each is sent all the same.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"
SOURCE=${DBZ_SOURCE:-poll}
if [ "$SOURCE" = wal ]; then
    . "$OBX_SRC/tests/wal/walmode.sh"
    trap 'drop_wal_slots; cleanup' EXIT
fi
# new_db NAME: a fresh database for this mode; in WAL mode the slot of the
# one before is dropped (the trap drops the last one's)
new_db() {
    if [ "$SOURCE" = poll ]; then fresh_db "$1"; return; fi
    [ -z "${WAL_DB:-}" ] || drop_wal_slots
    fresh_wal_db "$1_wal"
    WAL_DB=$TEST_DB
}
# init CFG: init-db, in this mode
init() { # CFG [--from beginning]: the rows written before init-db are sent too
    [ "$SOURCE" = poll ] || to_wal_mode "$1"
    "$OBX_BIN" init-db -c "$@" >/dev/null || fail "init-db -c $*"
}

kmock_start outbox.event.Order:2 outbox.event.Customer:2 outbox.event.order.paid:1 outbox.event.order.shipped:1 tmpl:3

# relay_cfg FILE COLUMNS DESTINATION
relay_cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; columns = { $2 }; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; };
outputs = ( { name = "kafka"; driver = "kafka";
              options = { bootstrap_servers = "$KM_BOOTSTRAP"; compat = "debezium";
                          timestamp = "created_at"; }; } );
routes = ( { event_type = "*"; output = "kafka"; destination = "$3"; } );
EOF
}

# --- Debezium's EventRouter table
new_db kt_debezium
sql "CREATE TABLE outbox (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
       aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)"
# the rows as Debezium's users write them, kept aside to compare with
sql "CREATE TABLE written AS SELECT gen_random_uuid() AS id,
       CASE WHEN g % 3 = 0 THEN 'Customer' ELSE 'Order' END::varchar(255) AS aggregatetype,
       (g % 7)::varchar(255) AS aggregateid, 'Created'::varchar(255) AS type,
       jsonb_build_object('n', g, 's', 'x y') AS payload FROM generate_series(1, 30) g"
dbz_write() {
    if [ "$SOURCE" = wal ]; then
        sql "BEGIN; INSERT INTO outbox SELECT * FROM written $1; DELETE FROM outbox; COMMIT"
    else
        sql "INSERT INTO outbox SELECT * FROM written $1"
    fi
}
[ "$SOURCE" = wal ] || dbz_write "WHERE aggregateid <> '6'" # poll: some before init-db
relay_cfg "$WORK/dbz.cfg" 'id = "relay_id"; event_id = "id"; aggregate_type = "aggregatetype";
    aggregate_id = "aggregateid"; event_type = "type";' 'outbox.event.${aggregate_type}'
init "$WORK/dbz.cfg" $([ "$SOURCE" = wal ] || echo --from beginning)
# plain INSERTs naming only Debezium's columns, after init-db
dbz_write "$([ "$SOURCE" = wal ] || echo "WHERE aggregateid = '6'")"
timeout 120 "$OBX_BIN" run --drain -c "$WORK/dbz.cfg" 2>"$WORK/dbz.log" || { tail "$WORK/dbz.log" >&2; fail "drain"; }
if [ "$SOURCE" = poll ]; then
    expect_eq "published" "$(sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) || '/' || count(*) FROM outbox")" 30/30
    expect_eq "Debezium's columns unchanged" \
        "$(sql "SELECT count(*) FROM outbox o JOIN written w USING (id, aggregatetype, aggregateid, type, payload)")" 30
fi
for t in outbox.event.Order outbox.event.Customer; do
    timeout 60 kcat -C -b "$KM_BOOTSTRAP" -t "$t" -o beginning -e -J -q >>"$WORK/dbz.json" || fail "kcat $t"
done
# one line per message: topic key headers payload, and the same from the rows
jq -r '[.topic, .key, (.headers | join(",")), .payload] | join("|")' "$WORK/dbz.json" | sort >"$WORK/dbz.got"
sql "SELECT 'outbox.event.' || aggregatetype || '|' || aggregateid || '|id,' || id || '|' || payload::text
     FROM written" | sort >"$WORK/dbz.want"
diff "$WORK/dbz.want" "$WORK/dbz.got" >&2 || fail "Kafka messages differ from EventRouter's (want < > got)"
expect_eq "messages" "$(wc -l <"$WORK/dbz.got")" 30
# timestamp = "created_at": each record's time is its row's, in ms
if [ "$SOURCE" = poll ]; then
    jq -r '[(.headers[1]), .ts] | @tsv' "$WORK/dbz.json" | sort >"$WORK/dbz.ts"
    sql "SELECT id || E'\t' || floor(extract(epoch FROM created_at) * 1000)::bigint FROM outbox" | sort >"$WORK/dbz.ts.want"
    diff "$WORK/dbz.ts.want" "$WORK/dbz.ts" >&2 || fail "record timestamps are not the rows' created_at"
fi

# --- a route shaping the row's headers (the relay's own table)
new_db kt_shaping
cat >"$WORK/shape.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; };
outputs = ( { name = "kafka"; driver = "kafka";
              options = { bootstrap_servers = "$KM_BOOTSTRAP"; compat = "debezium"; }; } );
routes = ( { event_type = "*"; output = "kafka"; destination = "shaped";
             drop_headers = [ "internal-*" ]; rename_headers = { traceparent = "trace-parent"; };
             set_headers = { source = "orders-\${aggregate_id}"; tenant = "acme"; }; } );
EOF
init "$WORK/shape.cfg"
sql "SELECT count(outbox_enqueue('Order', 'o' || (g % 4), 'order.created', jsonb_build_object('n', g),
       jsonb_build_object('internal-a', 'x', 'traceparent', '00-' || g, 'keep', 'k', 'tenant', 'other')))
     FROM generate_series(1, 20) g" >/dev/null
timeout 120 "$OBX_BIN" run --drain -c "$WORK/shape.cfg" 2>"$WORK/shape.log" || { tail "$WORK/shape.log" >&2; fail "drain"; }
timeout 60 kcat -C -b "$KM_BOOTSTRAP" -t shaped -o beginning -e -J -q >"$WORK/shape.json" || fail "kcat shaped"
jq -r '.headers | join(",")' "$WORK/shape.json" | sort >"$WORK/shape.got"
# jsonb keeps keys shortest first: keep, tenant, internal-a, traceparent
sql "SELECT 'id,' || event_id || ',keep,k,trace-parent,00-' || (payload->>'n') || ',source,orders-' ||
            aggregate_id || ',tenant,acme' FROM outbox" | sort >"$WORK/shape.want"
expect_eq "shaped messages" "$(wc -l <"$WORK/shape.got")" 20
diff "$WORK/shape.want" "$WORK/shape.got" >&2 || fail "shaped headers differ (want < > got)"

# --- key and partition from templates, and tombstones (a NULL payload as a
# null value, for compacted topics): partition = the aggregate's number,
# key = type/aggregate; an aggregate that gives no number is dead with why
new_db kt_templates
cat >"$WORK/tmpl.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; max_attempts = 1; };
outputs = ( { name = "kafka"; driver = "kafka"; tombstones = true;
              options = { bootstrap_servers = "$KM_BOOTSTRAP"; key_template = "\${aggregate_type}/\${aggregate_id}";
                          partition_template = "\${aggregate_id}"; }; } );
routes = ( { event_type = "*"; output = "kafka"; destination = "tmpl"; } );
EOF
init "$WORK/tmpl.cfg"
sql "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
     SELECT 'Order', (g % 3)::text, 'order.changed', CASE WHEN g % 4 = 0 THEN NULL ELSE jsonb_build_object('n', g) END
     FROM generate_series(1, 24) g ORDER BY g;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Order', 'x', 'order.changed', '{}')" >/dev/null
[ "$SOURCE" = wal ] || sql "CREATE TABLE tmpl_rows AS SELECT event_id, aggregate_id, payload FROM outbox"
timeout 120 "$OBX_BIN" run --drain -c "$WORK/tmpl.cfg" 2>"$WORK/tmpl.log" || { tail "$WORK/tmpl.log" >&2; fail "drain"; }
timeout 60 kcat -C -b "$KM_BOOTSTRAP" -t tmpl -o beginning -e -J -q >"$WORK/tmpl.json" || fail "kcat tmpl"
expect_eq "templated messages" "$(wc -l <"$WORK/tmpl.json")" 24
expect_eq "messages whose partition or key is not their aggregate's" \
    "$(jq -r 'select(.partition != (.key | split("/")[1] | tonumber) or (.key | startswith("Order/") | not)) | .key' "$WORK/tmpl.json" | wc -l)" 0
expect_eq "tombstones (null values)" "$(jq -r 'select(.payload == null) | .key' "$WORK/tmpl.json" | wc -l)" 6
# each aggregate's values in order: n rising, tombstones where g % 4 = 0
jq -r '[.partition, (.payload // "null")] | @tsv' "$WORK/tmpl.json" >"$WORK/tmpl.got"
sql "SELECT (g % 3) || E'\t' || CASE WHEN g % 4 = 0 THEN 'null' ELSE jsonb_build_object('n', g)::text END
     FROM generate_series(1, 24) g ORDER BY g % 3, g" >"$WORK/tmpl.want"
sort -s -n -k1,1 "$WORK/tmpl.got" | diff "$WORK/tmpl.want" - >&2 || fail "per-aggregate values differ (want < > got)"
if [ "$SOURCE" = wal ]; then
    expect_eq "the aggregate with no partition number: dead, with why" \
        "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE aggregate_id = 'x' AND dl_error LIKE '%partition_template gives \"x\", not a partition number%'")" 1
else
    expect_eq "the aggregate with no partition number: dead, with why" \
        "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'x' AND dead_at IS NOT NULL AND last_error LIKE '%partition_template gives \"x\", not a partition number%'")" 1
fi
# a template with an unknown field, and tombstones for a driver that cannot send them: refused at start
sed 's/partition_template = "${aggregate_id}"/partition_template = "${aggregate}"/' "$WORK/tmpl.cfg" >"$WORK/badtmpl.cfg"
if "$OBX_BIN" run --drain -c "$WORK/badtmpl.cfg" 2>"$WORK/badtmpl.log"; then fail "an unknown placeholder ran"; fi
grep -q 'badtmpl.cfg:5: setting "partition_template": environment variable aggregate is not set (nor is it a message field' "$WORK/badtmpl.log" || { cat "$WORK/badtmpl.log" >&2; fail "no reason for the bad template"; }
cat >"$WORK/memtomb.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "mem"; driver = "memory"; tombstones = true; } );
EOF
if "$OBX_BIN" check-config -c "$WORK/memtomb.cfg" >"$WORK/memtomb.out" 2>&1; then fail "tombstones accepted for the memory driver"; fi
grep -q 'memtomb.cfg:3: output mem: tombstones = true, but driver "memory" cannot send a null payload' "$WORK/memtomb.out" ||
    { cat "$WORK/memtomb.out" >&2; fail "no reason for tombstones on memory"; }

# --- the minimal table: no aggregate columns, one aggregate per event type
new_db kt_debezium_min
sql "CREATE TABLE outbox (id uuid PRIMARY KEY, message_type text NOT NULL, payload jsonb,
       created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz)"
relay_cfg "$WORK/min.cfg" 'id = "relay_id"; event_id = "id"; event_type = "message_type";
    aggregate_type = "message_type"; aggregate_id = "message_type";' 'outbox.event.${event_type}'
if [ "$SOURCE" = wal ]; then # one column in three roles: poll mode only, WAL mode says why
    to_wal_mode "$WORK/min.cfg"
    if "$OBX_BIN" init-db -c "$WORK/min.cfg" >"$WORK/min.out" 2>&1; then fail "WAL init-db took a shared column"; fi
    grep -q 'maps aggregate_type and aggregate_id to one column, "message_type": WAL mode needs' "$WORK/min.out" ||
        { cat "$WORK/min.out" >&2; fail "no reason for the shared column"; }
    echo "PASS wal_kafka_shaping (30 EventRouter-shaped rows, inserted and deleted, each as EventRouter sends it; 20 with shaped headers; 24 keyed, partitioned and tombstoned by templates)"
    exit 0
fi
init "$WORK/min.cfg"
sql "INSERT INTO outbox (id, message_type, payload) SELECT gen_random_uuid(),
       CASE WHEN g % 2 = 0 THEN 'order.paid' ELSE 'order.shipped' END, jsonb_build_object('n', g)
     FROM generate_series(1, 20) g"
timeout 120 "$OBX_BIN" run --drain -c "$WORK/min.cfg" 2>"$WORK/min.log" || { tail "$WORK/min.log" >&2; fail "drain"; }
for t in outbox.event.order.paid outbox.event.order.shipped; do
    timeout 60 kcat -C -b "$KM_BOOTSTRAP" -t "$t" -o beginning -e -J -q >>"$WORK/min.json" || fail "kcat $t"
done
jq -r '[.topic, .key, (.headers | join(",")), .payload] | join("|")' "$WORK/min.json" | sort >"$WORK/min.got"
sql "SELECT 'outbox.event.' || message_type || '|' || message_type || '|id,' || id || '|' || payload::text
     FROM outbox" | sort >"$WORK/min.want"
[ "$SOURCE" = wal ] || expect_eq "minimal table: marked" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 20
expect_eq "minimal table: messages" "$(wc -l <"$WORK/min.got")" 20
diff "$WORK/min.want" "$WORK/min.got" >&2 || fail "minimal table: messages differ (want < > got)"
# per event type (its aggregate), in insertion order
jq -r '[.topic, (.payload | fromjson | .n)] | @tsv' "$WORK/min.json" >"$WORK/min.order"
awk -F'\t' 'last[$1] != "" && $2 + 0 < last[$1] + 0 { bad++ } { last[$1] = $2 }
            END { exit bad ? 1 : 0 }' "$WORK/min.order" || fail "minimal table: order broken within an event type"

# compat and CloudEvents together are refused at start, with the reason
sed 's/compat = "debezium";/compat = "debezium"; format = "cloudevents";/' "$WORK/min.cfg" >"$WORK/both.cfg"
if "$OBX_BIN" run --drain -c "$WORK/both.cfg" 2>"$WORK/both.log"; then fail "compat with format cloudevents ran"; fi
grep -q 'choose one' "$WORK/both.log" || { cat "$WORK/both.log" >&2; fail "no reason for compat + cloudevents"; }
echo "PASS kafka_shaping (30 EventRouter-shaped and 20 minimal rows, each as EventRouter sends it; 20 with shaped headers; 24 keyed, partitioned and tombstoned by templates)"
