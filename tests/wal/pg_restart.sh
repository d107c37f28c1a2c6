#!/bin/bash
# WAL mode, database loss: the relay streaming 20,000 events (transactions of
# 100, 20 aggregates) while its PostgreSQL is restarted (fast shutdown); then
# 20,000 more, and the server crashed (immediate shutdown) mid-stream and
# started again; 5,000 more events are committed after the crash. The SAME
# relay process reconnects, streams again from the slot's confirmed position
# and relays everything: every committed event has
# an "ok" line, none that never committed, first publications in commit order
# per aggregate; duplicates are counted.
# Uses a PRIVATE PostgreSQL (WAL_PGF_PORT, default from free_ports) so the shared one is
# not disturbed.
ENG_TEST=walpgrestart
CURSOR_OWN_PG=1 # cursor_pg_restart: this private PostgreSQL is the cursor's
. "$(dirname "$0")/wal_lib.sh"

PGF_PORT=${WAL_PGF_PORT:-$(free_ports 1)}
PGF_DIR=/tmp/obx-walpgf-$PGF_PORT
pgf() { SVC_DIR=$PGF_DIR PG_PORT=$PGF_PORT bash "$SERVICES" "$@"; }
eng_extra_cleanup() { [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true; pgf pg-stop >/dev/null 2>&1 || true; }
pgf pg-stop
pgf pg-start
export PGHOST=127.0.0.1 PGPORT=$PGF_PORT PGUSER=postgres PGDATABASE=postgres

fresh_wal_db wal_pgrestart
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 20; threaded = true;"
init_db "$WORK/relay.cfg"
# 20 aggregates, one event of each in flight, 20 ms each: at most 1,000 events/s,
# so both outages land mid-stream
enqueue_txns 20000 20
alive() { kill -0 "$RELAY" 2>/dev/null || fail "the relay exited during $1 (log: $(tail -3 "$WORK/relay.log"))"; }
wait_ok() {
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        [ "$(ok_events)" -ge "$1" ] && return 0
        sleep 0.2
    done
    fail "waited $2 s for $1 events with an ok line, have $(ok_events)"
}

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_ok 2000 60
P1=$(ok_events)
# a fast shutdown waits for its walsenders, which wait until the relay has
# confirmed every commit: the restart lets the relay finish first
pgf pg-restart
alive "a PostgreSQL restart"
enqueue_txns 20000 20 100 order.after_restart
wait_ok $(($(ok_events) + 2000)) 90
alive "the work after the restart"

P2=$(ok_events)
pgf pg-crash
sleep 1 # the relay meets a dead server for a while
pgf pg-start
alive "a PostgreSQL crash"
enqueue_txns 5000 100 100 order.after_crash
wait_ok 45000 300
alive "the stream after the crash"
kill -TERM "$RELAY"
wait_exit "$RELAY" 30
expect_eq "relay exit code after SIGTERM" "$EXIT_RC" 0

[ "$P1" -lt 20000 ] && [ "$P2" -lt 40000 ] || fail "the outages did not land mid-stream ($P1 of 20000, $P2 of 40000 published)"
load_record
wal_expected
expect_eq "committed events" "$(sql "SELECT count(*) FROM ev")" 45000
check_wal_published
check_wal_order
[ "$(grep -c "$STREAMING_LINE" "$WORK/relay.log")" -ge 3 ] || fail "the relay did not stream again after each outage"
check_logs_clean
echo "PASS wal pg_restart: ok events before restart/crash: $P1/$P2, duplicates: $(dup_count)"
