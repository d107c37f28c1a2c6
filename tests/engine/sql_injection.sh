#!/bin/bash
# A table name built to break out of a SQL string literal (issue 12, item 1)
# must stay a name: on a database with standard_conforming_strings = off,
# where '\' escapes a quote, run (before and after init-db), status, requeue
# and init-db leave the victim table in place, and the relay publishes the
# rows of the table with that name. The same when the conninfo's own
# options turn standard_conforming_strings off.
ENG_TEST=sql_injection
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_sql_injection
sql "ALTER DATABASE $TEST_DB SET standard_conforming_strings = off"
sql "CREATE TABLE public.victim (x int); INSERT INTO public.victim VALUES (42)"
victim_ok() {
    expect_eq "$1: public.victim" "$(sql "SELECT coalesce((SELECT sum(x) FROM public.victim), -1)" 2>&1)" 42
}
victim_ok "before"

cat >"$WORK/relay.cfg" <<EOF
database = { conninfo = "\${OBX_TEST_DSN}"; table = "\${OBX_TEST_TABLE}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF

# the schema registry exists (a first, plain outbox), so a statement
# smuggled after the schema check's SELECT would run
export OBX_TEST_DSN=$TEST_DSN
OBX_TEST_TABLE=outbox "$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db of public.outbox"
# twice: the second time the conninfo itself asks for the unsafe setting
for dsn in "$TEST_DSN" "$TEST_DSN options='-c standard_conforming_strings=off'"; do
    export OBX_TEST_DSN=$dsn
    n=0
    for name in "v\\'; DROP TABLE public.victim; --" \
        "v\\'); DROP TABLE public.victim; --" \
        "v'||pg_sleep(0)||'\\'; DROP TABLE public.victim; --" \
        "\\\\'; DROP TABLE public.victim; --"; do
        n=$((n + 1))
        export OBX_TEST_TABLE=$name
        note "name $n: [$name]"
        # the first time before init-db: the schema check finds no schema
        "$OBX_BIN" run --drain -c "$WORK/relay.cfg" >"$WORK/run$n.log" 2>&1 || true
        victim_ok "name $n: run before init-db"
        "$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status$n.log" 2>&1 || true
        victim_ok "name $n: status before init-db"
        "$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init$n.log" 2>&1 || fail "name $n: init-db: $(cat "$WORK/init$n.log")"
        victim_ok "name $n: init-db"
        psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -v t="$name" -f - >/dev/null <<'EOF' || fail "name $n: enqueue"
SELECT format('public.%I', :'t') AS qt \gset
INSERT INTO :qt (aggregate_type, aggregate_id, event_type, payload)
  SELECT 'A', g::text, 'e', '{}' FROM generate_series(1, 5) g;
EOF
        : >"$REC"
        drain "$WORK/relay.cfg" "$WORK/drain$n.log" 60
        victim_ok "name $n: run"
        expect_eq "name $n: ok lines" "$(grep -c '"status":"ok"' "$REC")" 5
        "$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status$n.log" 2>&1 || fail "name $n: status: $(cat "$WORK/status$n.log")"
        grep -q "pending: *0" "$WORK/status$n.log" || fail "name $n: status: $(cat "$WORK/status$n.log")"
        "$OBX_BIN" requeue --all -c "$WORK/relay.cfg" >"$WORK/requeue$n.log" 2>&1 || fail "name $n: requeue: $(cat "$WORK/requeue$n.log")"
        victim_ok "name $n: status and requeue"
    done
done
# each outbox with its aggregate counters, idempotency keys and dead-forwarded events beside it
expect_eq "outbox tables made" "$(sql "SELECT count(*) FROM pg_class WHERE relname LIKE '%DROP TABLE%' AND relkind = 'r'")" "$((4 * n))"
expect_eq "registry rows" "$(sql "SELECT count(*) FROM public.outbox_relay_schema")" "$((n + 1))"
check_logs_clean
echo "PASS sql_injection"
