#!/bin/bash
# search_path hijack (issue 54): a role with CREATE on the outbox's schema
# (PostgreSQL 14's default for public) plants functions in it that shadow
# built-ins the relay's statements and init-db's functions call: a better
# match than pg_catalog's own (format(text, text, text) beats the variadic
# format(text, VARIADIC "any"); unnest(bigint[]) beats unnest(anyarray)).
# Each bumps a sequence (kept whatever rolls back) and raises a warning.
# Then init-db, enqueues by the application (its default search_path), a
# poll-mode run with relay.partitions on (the upkeep makes a partition ahead
# and drops an old one), status and requeue, and a cursor-mode table's
# init-db and run (its upkeep drops an old partition): none may call a
# planted function. Every event is published.
ENG_TEST=search_path
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_search_path
squatter_role

# the squatter's objects, made before init-db
psql -qAt -v ON_ERROR_STOP=1 "$TEST_DSN user=$SQ" >/dev/null <<'EOF' || fail "planting"
CREATE SEQUENCE public.hijacked;
GRANT USAGE, UPDATE, SELECT ON SEQUENCE public.hijacked TO PUBLIC;
CREATE FUNCTION public.hijack(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.nextval('public.hijacked'); RAISE WARNING 'hijacked: % as %', what, current_user; END $$;
CREATE FUNCTION public.format(f text, a text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack('format(text, text)'); RETURN pg_catalog.format(f, a); END $$;
CREATE FUNCTION public.format(f text, a text, b text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack('format(text, text, text)'); RETURN pg_catalog.format(f, a, b); END $$;
CREATE FUNCTION public.unnest(a text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack('unnest(text[])'); RETURN QUERY SELECT * FROM pg_catalog.unnest(a); END $$;
CREATE FUNCTION public.unnest(a bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack('unnest(bigint[])'); RETURN QUERY SELECT * FROM pg_catalog.unnest(a); END $$;
CREATE FUNCTION public.octet_length(p jsonb) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack('octet_length(jsonb)'); RETURN pg_catalog.octet_length(p::text); END $$;
EOF
hijacks() { sql "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.hijacked"; }
no_hijack() {
    expect_eq "$1: planted functions run" "$(hijacks)" 0
    ! grep -h "hijacked:" "$WORK"/*.log 2>/dev/null | head -3 | grep . >&2 || fail "$1: a log names a planted function"
}
expect_eq "the plant works" "$(sql "SELECT pg_catalog.count(*) FROM public.unnest(ARRAY['x']::text[])" 2>/dev/null)" 1
sql "ALTER SEQUENCE public.hijacked RESTART" >/dev/null
no_hijack "before"

PARTS='partitions = { interval = "1 hour"; ahead = 2; keep = "2 hours"; };'
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; max_payload_bytes = 100000; $PARTS" ""
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init.log" 2>&1 || fail "init-db: $(cat "$WORK/init.log")"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >>"$WORK/init.log" 2>&1 || fail "init-db again: $(cat "$WORK/init.log")"
no_hijack "init-db"

# an old partition (dropped by the upkeep once relayed) and one missing ahead
# (made by it); the application's events through outbox_enqueue, with keys
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE pg_catalog.format('CREATE TABLE outbox_a PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)',
         h - interval '5 hours', h - interval '4 hours');
     END \$\$;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
     SELECT 'Order', 'agg-' || (g % 7), 'order.created', '{}', date_trunc('hour', now()) - interval '5 hours' + g * interval '1 second'
     FROM generate_series(1, 50) g" >/dev/null
LAST=$(sql "SELECT part FROM outbox_partition_bounds('outbox') ORDER BY lo DESC LIMIT 1")
sql "ALTER TABLE outbox DETACH PARTITION $LAST; DROP TABLE $LAST" >/dev/null
AHEAD=$(sql "SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE hi > now()")
sql "SELECT outbox_enqueue('Order', 'agg-' || (g % 7), 'order.created', jsonb_build_object('n', g),
       p_idempotency_key => 'k' || g) FROM generate_series(1, 50) g" >/dev/null
no_hijack "enqueue"

start_relay "$WORK/relay.cfg" "$WORK/run.log"
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
wait_sql "SELECT to_regclass('outbox_a') IS NULL AND
           (SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE hi > now()) > $AHEAD" t 90
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.log" 2>&1 || fail "status: $(cat "$WORK/status.log")"
"$OBX_BIN" requeue --all -c "$WORK/relay.cfg" >"$WORK/requeue.log" 2>&1 || fail "requeue: $(cat "$WORK/requeue.log")"
stop_relay "$RELAY_PID" 60
no_hijack "poll-mode run"
expect_eq "events published" "$(grep -c '"status":"ok"' "$REC")" 100

# cursor mode: a table of its own, partitioned, with an old partition
: >"$REC"
cat >"$WORK/cursor.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; table = "cx"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; source = "cursor"; poll_interval_ms = 200; $PARTS };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF
"$OBX_BIN" init-db -c "$WORK/cursor.cfg" >"$WORK/cinit.log" 2>&1 || fail "cursor init-db: $(cat "$WORK/cinit.log")"
no_hijack "cursor init-db"
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE pg_catalog.format('CREATE TABLE cx_a PARTITION OF cx FOR VALUES FROM (%L) TO (%L)',
         h - interval '5 hours', h - interval '4 hours');
     END \$\$;
     INSERT INTO cx (aggregate_type, aggregate_id, event_type, payload, created_at)
     SELECT 'Order', 'agg-' || (g % 7), 'order.created', '{}', date_trunc('hour', now()) - interval '5 hours' + g * interval '1 second'
     FROM generate_series(1, 50) g" >/dev/null
sql "SELECT cx_enqueue('Order', 'agg-' || (g % 7), 'order.created', jsonb_build_object('n', g))
     FROM generate_series(1, 50) g" >/dev/null
start_relay "$WORK/cursor.cfg" "$WORK/crun.log"
wait_sql "SELECT to_regclass('cx_a') IS NULL" t 90
for ((i = 0; i < 300; i++)); do
    [ "$(grep -c '"status":"ok"' "$REC")" -ge 100 ] && break
    sleep 0.2
done
"$OBX_BIN" status -c "$WORK/cursor.cfg" >"$WORK/cstatus.log" 2>&1 || fail "cursor status: $(cat "$WORK/cstatus.log")"
stop_relay "$RELAY_PID" 60
no_hijack "cursor-mode run"
expect_eq "cursor events published" "$(grep -c '"status":"ok"' "$REC")" 100
check_logs_clean
echo "PASS search_path (init-db, enqueue, a partitioned poll run, a partitioned cursor run: no planted function ran)"
