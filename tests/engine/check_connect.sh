#!/bin/bash
# check-config --connect (issue 49, item 2): a deploy gate. After the config
# checks it reaches the database with the relay's role (schema version, the
# privileges the source needs) and each output's broker through its driver's
# probe: one line per failure on stderr naming the database or the output,
# exit 1, and --json for a machine. Against the shared PostgreSQL, RabbitMQ
# and Kafka mock.
ENG_TEST=check_connect
. "$(dirname "$0")/engine_lib.sh"
. "$(dirname "$0")/../wal/walmode.sh"
fresh_wal_db check_connect
WEAK=${TEST_DB}_weak
eng_extra_cleanup() {
    wal_drop_slots "$TEST_DB" || true
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" -c "DROP ROLE IF EXISTS $WEAK" >/dev/null 2>&1 || true
}
# cfg FILE CONNINFO AMQP_URL [SOURCE]: a RabbitMQ and a Kafka output
cfg() {
    local src=""
    [ -z "${4:-}" ] || src="source = \"$4\"; wal = { slot = \"$TEST_DB\"; };"
    cat >"$1" <<CONF
database = { conninfo = "$2"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; $src };
outputs = ( { name = "rabbit"; driver = "rabbitmq"; options = { url = "$3"; }; },
            { name = "kafka"; driver = "kafka"; options = { bootstrap_servers = "\${KAFKA_BOOTSTRAP}"; }; } );
routes = ( { event_type = "*"; output = "rabbit"; } );
CONF
}
# connect NAME EXPECTED_RC [ENV...]: check-config --connect -c $WORK/NAME.cfg,
# stdout in NAME.out, stderr in NAME.err
connect() {
    local name=$1 want=$2 rc=0 t0=$SECONDS
    shift 2
    env "$@" "$OBX_BIN" check-config -c "$WORK/$name.cfg" --connect ${JSON:+--json} \
        >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
    [ "$rc" = "$want" ] || fail "$name: exit $rc, not $want: $(cat "$WORK/$name.out" "$WORK/$name.err")"
    note "$name: exit $rc in $((SECONDS - t0)) s"
}
# says NAME PATTERN: one line of NAME's stderr is the failure PATTERN names
says() {
    grep -E "^outbox-relay: check-config: $2" "$WORK/$1.err" >/dev/null ||
        fail "$1: no failure line matching \"$2\" on stderr: $(cat "$WORK/$1.err")"
}

cfg "$WORK/good.cfg" "$TEST_DSN" "$AMQP_URL"
# before init-db: the schema is missing, and it says what to run
connect good 1
says good "database: table public.outbox has no outbox-relay schema: run \`outbox-relay init-db"
"$OBX_BIN" init-db -c "$WORK/good.cfg" >/dev/null 2>&1 || fail "init-db"

# everything right: exit 0, each check named on stdout
connect good 0
grep -q "^database: ok (role $PGUSER, schema version [0-9]*, poll source)" "$WORK/good.out" || fail "good: $(cat "$WORK/good.out")"
grep -q "^output rabbit (rabbitmq): ok" "$WORK/good.out" || fail "good: $(cat "$WORK/good.out")"
grep -q "^output kafka (kafka): ok" "$WORK/good.out" || fail "good: $(cat "$WORK/good.out")"
JSON=1 connect good 0
expect_eq "json ok" "$(jq -r '.ok' "$WORK/good.out")" true
expect_eq "json checks" "$(jq -r '[.sources[0].database.ok] + [.sources[0].outputs[].ok] | map(tostring) | join(",")' "$WORK/good.out")" "true,true,true"

# a wrong RabbitMQ password: the output is named, with the broker's refusal
cfg "$WORK/badpw.cfg" "$TEST_DSN" "${AMQP_URL/guest:guest@/guest:wrong-password@}"
connect badpw 1
says badpw "output rabbit \(rabbitmq\): .*ACCESS_REFUSED"
grep -q "check-config: output kafka" "$WORK/badpw.err" && fail "badpw: kafka named: $(cat "$WORK/badpw.err")"
JSON=1 connect badpw 1
expect_eq "json of a wrong password" "$(jq -r '[.ok, (.sources[0].outputs[] | select(.name == "rabbit") | .ok)] | map(tostring) | join(",")' "$WORK/badpw.out")" "false,false"

# the database unreachable (a closed port)
cfg "$WORK/nodb.cfg" "host=127.0.0.1 port=1 user=$PGUSER dbname=$TEST_DB" "$AMQP_URL"
connect nodb 1
says nodb "database: .*port 1 failed"

# Kafka unreachable
connect good 1 KAFKA_BOOTSTRAP=127.0.0.1:1
says good "output kafka \(kafka\): "
grep -q "check-config: output rabbit" "$WORK/good.err" && fail "kafka down: rabbit named: $(cat "$WORK/good.err")"

# a role that may read the outbox but not record what it sent
psql -qAt -d postgres -c "DROP ROLE IF EXISTS $WEAK" -c "CREATE ROLE $WEAK LOGIN" >/dev/null
sql "GRANT USAGE ON SCHEMA public TO $WEAK; GRANT SELECT ON ALL TABLES IN SCHEMA public TO $WEAK" >/dev/null
cfg "$WORK/weak.cfg" "host=$PGHOST port=$PGPORT user=$WEAK dbname=$TEST_DB" "$AMQP_URL"
connect weak 1
says weak "database: role \"$WEAK\" lacks UPDATE, DELETE on public.outbox"

# WAL mode: its objects missing, then a role without REPLICATION (what run
# would refuse at start)
cfg "$WORK/wal.cfg" "$TEST_DSN" "$AMQP_URL" wal
connect wal 1
says wal "database: replication slot \"$TEST_DB\" does not exist: run \`outbox-relay init-db"
"$OBX_BIN" init-db -c "$WORK/wal.cfg" >/dev/null 2>&1 || fail "init-db, WAL mode"
connect wal 0
grep -q "^database: ok (role $PGUSER, schema version [0-9]*, wal source)" "$WORK/wal.out" || fail "wal: $(cat "$WORK/wal.out")"
cfg "$WORK/walweak.cfg" "host=$PGHOST port=$PGPORT user=$WEAK dbname=$TEST_DB" "$AMQP_URL" wal
connect walweak 1
says walweak "database: WAL mode cannot run here: role \"$WEAK\" lacks the REPLICATION attribute"
sql "ALTER ROLE $WEAK REPLICATION" >/dev/null
connect walweak 1
says walweak "database: role \"$WEAK\" lacks SELECT, INSERT, UPDATE on public.outbox_dead_letter"
sql "GRANT SELECT, INSERT, UPDATE ON outbox_dead_letter TO $WEAK" >/dev/null
connect walweak 0

# the options belong together
rc=0; "$OBX_BIN" status -c "$WORK/good.cfg" --connect >/dev/null 2>&1 || rc=$?
expect_eq "status --connect" "$rc" 2
rc=0; "$OBX_BIN" check-config -c "$WORK/good.cfg" --json >/dev/null 2>&1 || rc=$?
expect_eq "check-config --json without --connect" "$rc" 2
echo "PASS check_connect"
