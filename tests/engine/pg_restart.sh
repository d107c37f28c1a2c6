#!/bin/bash
# Database loss: 20,000 events, the relay (2 workers, lease 2 s) publishing,
# and its PostgreSQL restarted (fast shutdown) and then crashed (immediate
# shutdown) and started again mid-run. The SAME relay process must survive
# (reconnect), keep publishing after each outage and drain everything; then
# every committed event is published and has an "ok" line, nothing unknown is
# published; duplicates are counted and printed.
# Uses a PRIVATE PostgreSQL (a port from free_ports, or ENGINE_PGF_PORT when others share
# the machine) so the shared one is not disturbed.
ENG_TEST=pgrestart
. "$(dirname "$0")/engine_lib.sh"

PGF_PORT=${ENGINE_PGF_PORT:-$(free_ports 1)} PGF_DIR=/tmp/obx-pgfault-$PGF_PORT
pgf() { SVC_DIR=$PGF_DIR PG_PORT=$PGF_PORT bash "$SERVICES" "$@"; }
eng_extra_cleanup() { pgf pg-stop >/dev/null 2>&1 || true; }
pgf pg-stop
pgf pg-start
export PGHOST=127.0.0.1 PGPORT=$PGF_PORT PGUSER=postgres PGDATABASE=postgres

fresh_db eng_pgrestart
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 100; lease_seconds = 2;" "delay_ms = 10; threaded = true;"
init_db "$WORK/relay.cfg"
enqueue_bulk 20000 500
sql "ANALYZE outbox"
# the last quarter is held until the crash is over, so the relay still has
# work after it however fast the machine
HELD_FROM=$(nth_id 15000)
hold_from "$HELD_FROM"

published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }
alive() { kill -0 "$RELAY" 2>/dev/null || fail "the relay exited during $1 (log: $(tail -3 "$WORK/relay.log"))"; }

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_sql "SELECT count(*) >= 2000 FROM outbox WHERE published_at IS NOT NULL" t 60

pgf pg-restart
alive "a PostgreSQL restart"
P1=$(published)
wait_sql "SELECT count(*) >= least($P1 + 2000, 15000) FROM outbox WHERE published_at IS NOT NULL" t 90
alive "the work after the restart"

pgf pg-crash
sleep 1 # the relay meets a dead server for a while
pgf pg-start
alive "a PostgreSQL crash"
P2=$(published)
release_from "$HELD_FROM"
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 150
alive "the drain after the crash"
kill -TERM "$RELAY"
wait_exit "$RELAY" 30
expect_eq "relay exit code after SIGTERM" "$EXIT_RC" 0

load_record
check_all_published
expect_eq "committed rows" "$(sql "SELECT count(*) FROM outbox")" 20000
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
grep -q "database connection lost; reconnecting" "$WORK/relay.log" || fail "no lost connection logged"
check_logs_clean
echo "pg_restart: published before restart/crash: $P1/$P2, duplicates: $(dup_count)," \
     "reconnections logged: $(grep -c "database connection lost; reconnecting" "$WORK/relay.log")"
echo "PASS pg_restart"
