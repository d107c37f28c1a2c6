#!/bin/bash
# SIGHUP does not stop the relay (issue 11: it exited 129 with rows left
# leased). Sent twice while batches are in flight, with the config
# unchanged: the relay reloads it twice (its output kept), keeps running,
# publishes the events committed afterwards, and a later SIGTERM exits 0
# with everything published once. (tests/engine/reload.sh changes routes.)
ENG_TEST=sighup
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_sighup
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50;" "delay_ms = 300;"
init_db "$WORK/relay.cfg"
enqueue_bulk 200 50

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/relay.log" "relay starting" 30
wait_sql "SELECT ($HELD_SQL) > 0" t 60
kill -HUP "$PID"
wait_log "$WORK/relay.log" "reload: config generation 1 applied .*outputs kept: mem; new or changed: none" 30
kill -HUP "$PID"
for ((i = 0; i < 100 && $(grep -c "reload: config generation [0-9]* applied" "$WORK/relay.log") < 2; i++)); do sleep 0.1; done
expect_eq "reloads" "$(grep -c "reload: config generation [0-9]* applied" "$WORK/relay.log")" 2
kill -0 "$PID" 2>/dev/null || fail "the relay did not survive SIGHUP"
enqueue_bulk 200 50
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 120
kill -0 "$PID" 2>/dev/null || fail "the relay exited"
stop_relay "$PID" 30

load_record
expect_eq "events" "$(sql "SELECT count(*) FROM outbox")" 400
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
check_logs_clean
echo "PASS sighup"
