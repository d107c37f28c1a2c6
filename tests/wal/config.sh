#!/bin/bash
# WAL mode's settings and prerequisites: a bad relay.source, slot name or
# relay.wal key is refused at its file:line (exit 2); init-db names what the
# role lacks and how to fix it; `run` on a slot that does not exist says to
# run init-db (exit 1); --reset-slot is refused in poll mode (exit 2).
ENG_TEST=walconfig
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_config
expect_refused() { # CFG WANT_RC PATTERN
    local rc=0
    "$OBX_BIN" check-config -c "$1" >"$WORK/out" 2>&1 || rc=$?
    expect_eq "exit code for $(basename "$1")" "$rc" "$2"
    grep -qE "$3" "$WORK/out" || fail "$(basename "$1"): no /$3/ in: $(cat "$WORK/out")"
}
write_cfg "$WORK/bad_source.cfg" "source = \"logical\";" ""
expect_refused "$WORK/bad_source.cfg" 2 "bad_source.cfg:2: .*source"
write_wal_cfg "$WORK/ok.cfg" "" ""
"$OBX_BIN" check-config -c "$WORK/ok.cfg" >/dev/null || fail "a WAL mode config is refused"
write_cfg "$WORK/bad_slot.cfg" "source = \"wal\"; wal = { slot = \"Bad-Name\"; };" ""
expect_refused "$WORK/bad_slot.cfg" 2 "bad_slot.cfg:2: relay.wal.slot must be 1 to 63 lower-case letters"
write_cfg "$WORK/bad_key.cfg" "source = \"wal\"; wal = { slots = \"x\"; };" ""
expect_refused "$WORK/bad_key.cfg" 2 "bad_key.cfg:2: .*slots"
write_cfg "$WORK/bad_range.cfg" "source = \"wal\"; wal = { max_in_flight = 0; };" ""
expect_refused "$WORK/bad_range.cfg" 2 "bad_range.cfg:2: .*max_in_flight"

# a role without REPLICATION (roles are cluster-wide: named after the database)
NOREPL=${TEST_DB}_norepl
sql "DROP ROLE IF EXISTS $NOREPL; CREATE ROLE $NOREPL LOGIN; GRANT ALL ON DATABASE $TEST_DB TO $NOREPL;
     GRANT ALL ON SCHEMA public TO $NOREPL"
sed "s/user=$PGUSER/user=$NOREPL/" <<<"$TEST_DSN" >"$WORK/dsn"
NOREPL_DSN=$(cat "$WORK/dsn") write_cfg "$WORK/norepl.cfg" "source = \"wal\"; wal = { slot = \"$TEST_DB\"; };" ""
sed -i 's/\${TEST_DSN}/${NOREPL_DSN}/' "$WORK/norepl.cfg"
rc=0
NOREPL_DSN=$(cat "$WORK/dsn") "$OBX_BIN" init-db -c "$WORK/norepl.cfg" >"$WORK/norepl.out" 2>&1 || rc=$?
expect_eq "init-db exit code without REPLICATION" "$rc" 1
grep -qF "role \"$NOREPL\" lacks the REPLICATION attribute (ALTER ROLE \"$NOREPL\" REPLICATION;)" "$WORK/norepl.out" ||
    fail "init-db does not say what is missing: $(cat "$WORK/norepl.out")"
sql "DROP OWNED BY $NOREPL; DROP ROLE $NOREPL"

# the poll schema but no slot: run says what to do
write_cfg "$WORK/poll.cfg" "" ""
init_db "$WORK/poll.cfg"
rc=0
"$OBX_BIN" init-db --reset-slot -c "$WORK/poll.cfg" >"$WORK/reset.out" 2>&1 || rc=$?
expect_eq "--reset-slot in poll mode" "$rc" 2
rc=0
timeout 30 "$OBX_BIN" run -c "$WORK/ok.cfg" >"$WORK/noslot.log" 2>&1 || rc=$?
expect_eq "run without a slot" "$rc" 1
grep -q "replication slot \"$TEST_DB\" does not exist: run \`outbox-relay init-db" "$WORK/noslot.log" ||
    fail "run without a slot: $(cat "$WORK/noslot.log")"
echo "PASS wal config"
