#!/bin/bash
# The relay's own tables cannot be planted (issue 54): a role with CREATE on
# the outbox's schema makes views named outbox_relay_control (operator
# control, read by every relay each second) and outbox_relay_replay (replay
# progress) that call its function, which bumps a sequence (kept whatever
# rolls back) and raises a warning.
#  - before init-db: init-db refuses, naming the view and its owner, and
#    makes nothing; once they are dropped, init-db makes both tables.
#  - after an install that lacks them (they are dropped again, the views
#    planted anew): a running relay, pause, resume, status and replay each
#    refuse with the reason, and the relay still publishes.
# The function never runs.
ENG_TEST=planted_tables
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_planted
squatter_role
as_squatter "CREATE SEQUENCE public.planted_ran;
  GRANT USAGE, UPDATE, SELECT ON SEQUENCE public.planted_ran TO PUBLIC;
  CREATE FUNCTION public.planted() RETURNS text LANGUAGE plpgsql AS \$\$
  BEGIN PERFORM pg_catalog.nextval('public.planted_ran'); RAISE WARNING 'planted ran as %', current_user;
    RETURN ''; END \$\$" >/dev/null
plant() {
    as_squatter "CREATE VIEW public.outbox_relay_control AS SELECT 'outbox'::text AS table_name,
        'source'::text AS scope, ''::text AS name, now() AS paused_at, public.planted() AS paused_by,
        'planted'::text AS reason;
      CREATE VIEW public.outbox_relay_replay AS SELECT public.planted() AS name, ''::text AS args,
        now() AS since, now() AS until, 0::bigint AS max_id, 0::bigint AS done_through,
        0::bigint AS replayed, 0::bigint AS failed, now() AS started_at, now() AS updated_at,
        NULL::timestamptz AS finished_at" >/dev/null
}
never_ran() {
    expect_eq "$1: the planted function's runs" \
        "$(sql "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.planted_ran")" 0
}
plant
never_ran "planted"

cat >"$WORK/relay.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; },
            { name = "copy"; driver = "memory"; } );
routes = ( { output = "mem"; } );
EOF
"$OBX_BIN" check-config -c "$WORK/relay.cfg" >"$WORK/check.log" 2>&1 || fail "config: $(cat "$WORK/check.log") $(cat "$WORK/relay.cfg")"

rc=0
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "init-db accepted a planted outbox_relay_control: $(cat "$WORK/init.out")"
grep -q "outbox_relay_control.*view.*$SQ" "$WORK/init.out" || fail "init-db's reason: $(cat "$WORK/init.out")"
expect_eq "outbox made by the refused init-db" "$(sql "SELECT to_regclass('public.outbox') IS NULL")" t
never_ran "init-db"

sql "DROP VIEW public.outbox_relay_control, public.outbox_relay_replay" >/dev/null
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init2.out" 2>&1 || fail "init-db: $(cat "$WORK/init2.out")"
expect_eq "tables init-db made" "$(sql "SELECT string_agg(relname::text || ':' || relkind::text, ' ' ORDER BY relname) FROM pg_class
    WHERE relname IN ('outbox_relay_control', 'outbox_relay_replay')")" "outbox_relay_control:r outbox_relay_replay:r"

# an install that lacks them (made before init-db made them), planted again
sql "DROP TABLE public.outbox_relay_control, public.outbox_relay_replay" >/dev/null
plant
sql "SELECT outbox_enqueue('Order', 'a' || g, 'order.created', '{}') FROM generate_series(1, 20) g" >/dev/null
start_relay "$WORK/relay.cfg" "$WORK/run.log"
wait_log "$WORK/run.log" "outbox_relay_control" 30
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
grep -q "outbox_relay_control.*view.*$SQ" "$WORK/run.log" || fail "the relay's reason: $(grep control "$WORK/run.log")"
for cmd in "pause --source" "resume --source" "status"; do
    rc=0
    # shellcheck disable=SC2086
    "$OBX_BIN" $cmd -c "$WORK/relay.cfg" >"$WORK/cmd.out" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] || fail "$cmd accepted the planted table: $(cat "$WORK/cmd.out")"
    grep -q "outbox_relay_control.*view.*$SQ" "$WORK/cmd.out" || fail "$cmd's reason: $(cat "$WORK/cmd.out")"
done
rc=0
"$OBX_BIN" replay -c "$WORK/relay.cfg" --since "$(sql "SELECT now() - interval '1 hour'")" --to copy \
    >"$WORK/replay.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "replay accepted the planted table: $(cat "$WORK/replay.out")"
grep -q "outbox_relay_replay.*view.*$SQ" "$WORK/replay.out" || fail "replay's reason: $(cat "$WORK/replay.out")"
stop_relay "$RELAY_PID" 30
never_ran "relay, pause, resume, status, replay"
! grep -h "planted ran" "$WORK"/*.log "$WORK"/*.out | head -3 | grep . >&2 || fail "a log says the planted function ran"
expect_eq "events published" "$(grep -c '"status":"ok"' "$REC")" 20
check_logs_clean
echo "PASS planted_tables (init-db refused the views; the relay, pause, resume, status and replay refused them; the function never ran)"
