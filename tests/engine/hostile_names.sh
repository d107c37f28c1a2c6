#!/bin/bash
# Names init-db accepts must work end to end (issue 12, item 2): init-db
# (twice: idempotent), enqueue in a transaction (INSERT and the enqueue
# function), the relay with the memory driver, status. Cases: mixed case with
# a lower-case namesake table (its sequence must stay untouched), quotes,
# backslash, "$$", dots and spaces, 63-byte schema and table (derived names
# and the channel shortened with a hash), two 63-byte tables sharing a long
# prefix in one schema (no object replaced by the other's), and the upgrade
# of a version 1 install whose names PostgreSQL cut at 63 bytes.
ENG_TEST=hostile_names
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_hostile_names

# psql with the case's names as variables :'s' and :'t', and :fn the enqueue
# function init-db printed (script on stdin).
psql_names() { psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -v s="$S" -v t="$T" -v fn="${FN:-}" -f -; }

# names_cfg FILE: a memory-driver config for schema $S and table $T, passed
# through the environment so any byte reaches the relay as is.
names_cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; schema = "\${OBX_TEST_SCHEMA}"; table = "\${OBX_TEST_TABLE}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF
}

# end_to_end CASE [OBJECTS]: init-db twice, 10 rows by INSERT and 2 by the enqueue
# function in one transaction, run --drain, every row published once, status.
end_to_end() {
    local case=$1
    note "$case: schema [$S] table [$T]"
    export OBX_TEST_SCHEMA=$S OBX_TEST_TABLE=$T
    names_cfg "$WORK/$case.cfg"
    "$OBX_BIN" init-db -c "$WORK/$case.cfg" >"$WORK/$case.init.log" 2>&1 || fail "$case: init-db: $(cat "$WORK/$case.init.log")"
    "$OBX_BIN" init-db -c "$WORK/$case.cfg" >>"$WORK/$case.init.log" 2>&1 || fail "$case: second init-db: $(cat "$WORK/$case.init.log")"
    FN=$(sed -n 's/.*(enqueue with \(.*\), notify channel .*/\1/p' "$WORK/$case.init.log" | tail -1)
    [ -n "$FN" ] || fail "$case: init-db did not name the enqueue function: $(cat "$WORK/$case.init.log")"
    psql_names >"$WORK/$case.enqueue.out" 2>&1 <<'EOF' || fail "$case: enqueue: $(cat "$WORK/$case.enqueue.out")"
SELECT format('%I.%I', :'s', :'t') AS qt \gset
BEGIN;
INSERT INTO :qt (aggregate_type, aggregate_id, event_type, payload)
  SELECT 'A', (g % 3)::text, 'e', jsonb_build_object('n', g) FROM generate_series(1, 10) g;
SELECT :fn('A', '0', 'e', '{"n": 11}'::jsonb);
SELECT :fn('A', '1', 'e', '{"n": 12}'::jsonb, NULL, 'custom.dest');
COMMIT;
EOF
    : >"$REC"
    drain "$WORK/$case.cfg" "$WORK/$case.log" 120
    load_record
    local counts
    counts=$(psql_names <<'EOF'
SELECT format('%I.%I', :'s', :'t') AS qt \gset
SELECT count(*) FILTER (WHERE published_at IS NOT NULL) || '/' || count(*)
       || '/' || count(DISTINCT id) || '/' || (SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok')
  FROM :qt;
EOF
)
    expect_eq "$case: published/rows/distinct ids/ok events" "$counts" "12/12/12/12"
    "$OBX_BIN" status -c "$WORK/$case.cfg" --json >"$WORK/$case.status" 2>&1 || fail "$case: status: $(cat "$WORK/$case.status")"
    grep -q '"pending":0,' "$WORK/$case.status" || fail "$case: status: $(cat "$WORK/$case.status")"
    # per-aggregate order: each aggregate's first "ok" lines follow its ids
    expect_eq "$case: events of an aggregate published out of id order" "$(psql_names <<'EOF'
SELECT format('%I.%I', :'s', :'t') AS qt \gset
SELECT count(*) FROM (SELECT o.id, lag(o.id) OVER (PARTITION BY o.aggregate_id ORDER BY f.line) AS prev
  FROM :qt o JOIN (SELECT event_id, min(line) AS line FROM r WHERE status = 'ok' GROUP BY event_id) f
  ON f.event_id = o.event_id) x WHERE prev > id;
EOF
)" 0
    check_objects "$case" "${2:-}"
}

# check_objects CASE [WANT]: 2 triggers (enabled, each calling the function of
# its name), 6 indexes besides the primary key, 5 functions in the schema (4 of
# the table's, and the schema's payload size function).
check_objects() {
    local got
    got=$(psql_names <<'EOF'
SELECT (SELECT count(*) FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid
         WHERE g.tgrelid = format('%I.%I', :'s', :'t')::regclass AND NOT g.tgisinternal
         AND g.tgenabled <> 'D' AND g.tgname = p.proname)
  || '/' || (SELECT count(*) FROM pg_index WHERE indrelid = format('%I.%I', :'s', :'t')::regclass AND NOT indisprimary)
  || '/' || (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname = :'s');
EOF
)
    expect_eq "$1: triggers/indexes/functions" "$got" "${2:-2/6/5}"
}

# 1. Mixed case, with public.orders beside it: ids must come from the
#    outbox's own sequence, never from the namesake's.
sql "CREATE TABLE public.orders (id bigserial PRIMARY KEY, x int)"
S=Billing T=Orders
end_to_end mixed_case
expect_eq "public.orders sequence used" "$(sql "SELECT is_called FROM public.orders_id_seq")" f

# 2. Quotes, a backslash, dollar quotes (also the relay's own tag), a dot, spaces.
S='Sch"e.ma $$' T="Ta'ble\\\"x\$\$ \$obx\$ .y"
end_to_end quoted

# 3. 63 bytes each, mixed case: the channel and the derived names are hashed.
S=Sch$(printf 'e%.0s' {1..60}) T=Tab$(printf 'L%.0s' {1..60})
[ ${#S} -eq 63 ] && [ ${#T} -eq 63 ] || fail "test bug: name lengths ${#S} ${#T}"
end_to_end long63

# 4. Two 63-byte tables in one schema, the same first 61 bytes; version 1
#    cut "<table>_order" and "<table>_notify" to one name. Each table keeps
#    its own ordering and notify triggers, indexes and functions.
P=t$(printf 'x%.0s' {1..60})
S=shared T=${P}_a
end_to_end long_a
T=${P}_b
end_to_end long_b 2/6/9  # the schema holds the functions of both, and one payload size function
T=${P}_a
check_objects "long_a after long_b" 2/6/9
expect_eq "objects in schema shared" "$(sql "SELECT (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'shared')
  || '/' || (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'shared' AND c.relkind = 'i')")" "9/25"  # functions: 2 x 4 and the shared payload size; indexes: 2 x (7, the counters' key, the idempotency keys' two, the dead-forwarded key), the keys of the registry, the control and the replay tables

# 5. Upgrade: a version 1 install of a 61-byte table, its objects under the
#    names version 1 gave them: PostgreSQL cut them to 63 bytes, so
#    "_pending" and "_published" collided (version 1 had only one of them).
S=upgrade T=v1$(printf 'o%.0s' {1..59})
export OBX_TEST_SCHEMA=$S OBX_TEST_TABLE=$T
names_cfg "$WORK/upgrade.cfg"
"$OBX_BIN" init-db -c "$WORK/upgrade.cfg" >/dev/null || fail "upgrade: first init-db"
psql_names >"$WORK/upgrade.v1.out" 2>&1 <<'EOF' || fail "upgrade: making the version 1 objects: $(cat "$WORK/upgrade.v1.out")"
SELECT format('%I.%I', :'s', :'t') AS qt, format('%I', :'s') AS qs,
       format('%I', :'t' || '_event_id') AS i_event, format('%I', :'t' || '_pending') AS i_pending,
       format('%I', :'t' || '_published') AS i_published, format('%I', :'t' || '_dead') AS i_dead,
       format('%I', :'t' || '_aggregate_pending') AS i_aggregate,
       format('%I', :'t' || '_order') AS f_order, format('%I', :'t' || '_notify') AS f_notify,
       format('%I', :'t' || '_enqueue') AS f_enqueue \gset
CREATE INDEX IF NOT EXISTS :i_event ON :qt (event_id);
CREATE INDEX IF NOT EXISTS :i_pending ON :qt (id) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS :i_published ON :qt (published_at);
CREATE INDEX IF NOT EXISTS :i_dead ON :qt (dead_at);
CREATE INDEX IF NOT EXISTS :i_aggregate ON :qt (aggregate_type, aggregate_id, id) WHERE published_at IS NULL;
CREATE FUNCTION :qs.:f_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION :qs.:f_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION :qs.:f_enqueue(text, text, text, jsonb, jsonb DEFAULT NULL, text DEFAULT NULL)
  RETURNS uuid LANGUAGE sql AS $$ SELECT gen_random_uuid() $$;
CREATE TRIGGER :f_order BEFORE INSERT ON :qt FOR EACH ROW EXECUTE FUNCTION :qs.:f_order();
CREATE TRIGGER :f_notify AFTER INSERT ON :qt FOR EACH STATEMENT EXECUTE FUNCTION :qs.:f_notify();
UPDATE :qs.outbox_relay_schema SET version = 1;
EOF
check_objects "upgrade: version 1 state" "4/10/8"
rc=0
"$OBX_BIN" run --drain -c "$WORK/upgrade.cfg" >"$WORK/upgrade.run.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "schema version 1, this relay needs 3" "$WORK/upgrade.run.log" ||
    fail "upgrade: run on a version 1 schema (exit $rc): $(cat "$WORK/upgrade.run.log")"
"$OBX_BIN" init-db -c "$WORK/upgrade.cfg" >/dev/null || fail "upgrade: init-db"
check_objects "upgrade: after init-db"
"$OBX_BIN" init-db -c "$WORK/upgrade.cfg" >/dev/null || fail "upgrade: init-db again"
check_objects "upgrade: after a second init-db"
expect_eq "upgrade: version" "$(sql "SELECT version FROM upgrade.outbox_relay_schema")" 3
end_to_end upgraded

check_logs_clean
echo "PASS hostile_names"
