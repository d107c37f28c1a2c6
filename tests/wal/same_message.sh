#!/bin/bash
# WAL mode builds the same messages as poll mode: the same events relayed by
# both (poll mode claims the rows, WAL mode reads the same inserts from the
# slot) through the file driver, which writes every field it gets (event id,
# type, aggregate, destination from a route template or the row's override,
# created_at to the microsecond, attempt, headers, payload): the two files
# hold the same lines. Once with a jsonb payload, once with a bytea one (an
# existing table, its payload column mapped).
ENG_TEST=walsame
. "$(dirname "$0")/wal_lib.sh"

# cfg FILE SOURCE OUT: the file driver, two routes
cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; columns = { payload = "body"; }; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; source = "$2"; wal = { slot = "$TEST_DB"; }; };
outputs = ( { name = "f"; driver = "file"; options = { path = "$3"; }; } );
routes = ( { event_type = "order.*"; output = "f"; destination = "orders.\${aggregate_type}.\${aggregate_id}"; },
           { output = "f"; destination = "other.\${event_type}"; } );
EOF
}

compare() { # TYPE
    cfg "$WORK/poll.cfg" poll "$WORK/poll-$1.jsonl"
    cfg "$WORK/wal.cfg" wal "$WORK/wal-$1.jsonl"
    "$OBX_BIN" init-db -c "$WORK/wal.cfg" >/dev/null || fail "init-db ($1)"
    local p="jsonb_build_object('n', g, 'text', 'h' || chr(233) || 'llo \"q\"', 'list', jsonb_build_array(1, 2.5, null))"
    [ "$1" = bytea ] && p="decode('00ff10', 'hex') || int4send(g)"
    sql "SELECT outbox_enqueue('Order', 'a-' || g, 'order.paid', $p,
             jsonb_build_object('traceparent', '00-' || g, 'n', g, 'flag', g % 2 = 0),
             CASE WHEN g % 3 = 0 THEN 'override.' || g END) FROM generate_series(1, 30) g" >/dev/null
    sql "SELECT outbox_enqueue('Invoice', 'i-1', 'invoice.sent', $p) FROM generate_series(31, 31) g" >/dev/null
    drain "$WORK/poll.cfg" "$WORK/poll-$1.log" 60
    drain "$WORK/wal.cfg" "$WORK/wal-$1.log" 60
    expect_eq "poll mode lines ($1)" "$(wc -l <"$WORK/poll-$1.jsonl")" 31
    sort "$WORK/poll-$1.jsonl" >"$WORK/poll-$1.sorted"
    sort "$WORK/wal-$1.jsonl" >"$WORK/wal-$1.sorted"
    diff "$WORK/poll-$1.sorted" "$WORK/wal-$1.sorted" >&2 || fail "WAL mode's messages differ from poll mode's ($1)"
}

fresh_wal_db wal_same
sql "CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id uuid NOT NULL DEFAULT gen_random_uuid(),
     aggregate_type text NOT NULL, aggregate_id text NOT NULL, event_type text NOT NULL, body jsonb, headers jsonb,
     destination text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())"
compare jsonb
fresh_wal_db wal_same
sql "CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id uuid NOT NULL DEFAULT gen_random_uuid(),
     aggregate_type text NOT NULL, aggregate_id text NOT NULL, event_type text NOT NULL, body bytea, headers jsonb,
     destination text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())"
compare bytea
grep -q '"payload_encoding":"base64"' "$WORK/wal-bytea.jsonl" || fail "the bytea payload did not travel as bytes"
echo "PASS wal same_message: 31 events, jsonb and bytea payloads, identical lines in both modes"
