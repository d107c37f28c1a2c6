#!/bin/bash
# max_connections exhausted, on a PRIVATE PostgreSQL (max_connections 12, 3
# of them reserved for superusers; port ENGINE_MAXCONN_PORT or one from free_ports): the relay
# connects as an ordinary role, other clients hold every other slot.
# - At start: `run` exits 1 with one line saying why (the server's "remaining
#   connection slots are reserved ..."); started again once slots are free, it
#   relays.
# - Mid-run: the relay's sessions are ended while the slots are taken (the
#   database closed to new connections meanwhile, so the fill is not a race
#   with its reconnects): it logs the refusal and its retry, keeps running,
#   and once the slots are freed it reconnects and relays everything,
#   including what was committed while it could not connect.
# The memory driver's record is the broker log: every event published, none
# unknown, order kept per aggregate.
ENG_TEST=maxconn
. "$(dirname "$0")/engine_lib.sh"

PGF_PORT=${ENGINE_MAXCONN_PORT:-$(free_ports 1)} PGF_DIR=/tmp/obx-maxconn-$PGF_PORT
pgf() { SVC_DIR=$PGF_DIR PG_PORT=$PGF_PORT bash "$SERVICES" "$@"; }
eng_extra_cleanup() { pgf pg-stop >/dev/null 2>&1 || true; rm -rf "$PGF_DIR"; }
pgf pg-stop >/dev/null 2>&1 || true
rm -rf "$PGF_DIR"
PG_EXTRA_CONF=$'max_connections = 12\nsuperuser_reserved_connections = 3' pgf pg-start
export PGHOST=127.0.0.1 PGPORT=$PGF_PORT PGUSER=postgres PGDATABASE=postgres
expect_eq "max_connections" "$(psql -qAt -c "SHOW max_connections")" 12

psql -qAt -c "CREATE ROLE relay_app LOGIN" -c "CREATE ROLE filler LOGIN" >/dev/null
fresh_db eng_maxconn
psql -qAt -c "ALTER DATABASE $TEST_DB OWNER TO relay_app" >/dev/null
export TEST_DSN="host=127.0.0.1 port=$PGF_PORT user=relay_app dbname=$TEST_DB"
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 10;" "delay_ms = 50; threaded = true;"
init_db "$WORK/relay.cfg"
enqueue_bulk 6000 100

# fill_slots: ordinary clients (role filler, database postgres) until the
# server refuses the next one; sets FILLERS (their pids). Each filler says
# itself that it is connected: a superuser session of the test looking
# meanwhile would take a slot and make the count wrong.
FILLERS=() FILL_N=0
fill_slots() {
    local i t pid out
    for ((i = 0; i < 20; i++)); do
        FILL_N=$((FILL_N + 1))
        out=$WORK/filler.$FILL_N.out
        : >"$out"
        PGAPPNAME=obx_filler psql -qAt "host=127.0.0.1 port=$PGF_PORT user=filler dbname=postgres" \
            -c "SELECT 'connected'" -c "SELECT pg_sleep(900)" >"$out" 2>&1 &
        pid=$!
        for ((t = 0; t < 300; t++)); do
            grep -q connected "$out" && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if ! grep -q connected "$out"; then
            kill -0 "$pid" 2>/dev/null && fail "filler $FILL_N neither connected nor refused in 30 s"
            wait "$pid" 2>/dev/null || true
            grep -q "remaining connection slots are reserved" "$out" || fail "filler $FILL_N failed otherwise: $(cat "$out")"
            return 0
        fi
        FILLERS+=("$pid")
        ENG_PIDS+=("$pid")
    done
    fail "20 fillers connected: max_connections is not 12"
}
free_slots() {
    kill "${FILLERS[@]}" 2>/dev/null || true
    psql -qAt -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'obx_filler'" >/dev/null
    FILLERS=()
}

# ---- at start
fill_slots
AT_START=${#FILLERS[@]}
rc=0
timeout 60 "$OBX_BIN" run -c "$WORK/relay.cfg" >"$WORK/start.log" 2>&1 || rc=$?
expect_eq "run with every slot taken: exit code" "$rc" 1
grep -q "cannot connect to the database: .*remaining connection slots are reserved" "$WORK/start.log" ||
    fail "no clear line at start: $(cat "$WORK/start.log")"
free_slots

# ---- mid-run
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_sql "SELECT count(*) >= 500 FROM outbox WHERE published_at IS NOT NULL" t 60
psql -qAt -c "ALTER DATABASE $TEST_DB ALLOW_CONNECTIONS false" >/dev/null
psql -qAt -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
              WHERE datname = '$TEST_DB' AND application_name LIKE 'outbox-relay%'" >/dev/null
fill_slots
MID_RUN=${#FILLERS[@]}
psql -qAt -c "ALTER DATABASE $TEST_DB ALLOW_CONNECTIONS true" >/dev/null
# the relay's role gets no slot now; a superuser still gets a reserved one
wait_log "$WORK/relay.log" "cannot connect to the database: .*remaining connection slots are reserved.*retrying in" 60
REFUSED_AT=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
[ "$REFUSED_AT" -lt 6000 ] || fail "everything was published before the slots were taken"
enqueue_bulk 1000 100 # as postgres: a reserved slot
sleep 3 # refused for a while: nothing may be published meanwhile
expect_eq "published while the relay had no connection" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$REFUSED_AT"
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited while it could not connect"
free_slots
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 120
stop_relay "$RELAY_PID" 30

load_record
check_all_published
check_order
expect_eq "committed rows" "$(sql "SELECT count(*) FROM outbox")" 7000
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
check_logs_clean
REFUSALS=$(grep -c "remaining connection slots are reserved" "$WORK/relay.log" || true)
echo "max_connections: at start $AT_START fillers took every slot: exit 1 with the server's reason;" \
     "mid-run $MID_RUN fillers, $REFUSALS refusals logged, published $REFUSED_AT before, 7000 after the slots were freed," \
     "duplicates $(dup_count)"
echo "PASS max_connections"
