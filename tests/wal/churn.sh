#!/bin/bash
# Connection churn, WAL mode: a producer writes events (batches of 20 over
# 300 aggregates, rows that stay) while one relay streams them from its slot
# to RabbitMQ, and its backends are terminated every 1-5 s for
# WAL_CHURN_SECONDS (120): all of them (the walsender and the relay's other
# sessions), one at random, or the walsender. Only the relay's own sessions of the test database are killed.
# The same relay process must survive and catch up (the slot confirmed past
# the last commit); then, counted on the broker's side (the queue read back):
# every committed event received, nothing unknown, each aggregate's events
# first delivered in commit order; duplicates (replays from the confirmed
# position) counted and printed.
ENG_TEST=walchurn
. "$(dirname "$0")/wal_lib.sh"
. "$(dirname "$0")/../engine/churn_lib.sh"
eng_extra_cleanup() {
    churn_queue_cleanup
    [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true
}

SECS=${WAL_CHURN_SECONDS:-120}
fresh_wal_db wal_churn
churn_cfg "$WORK/relay.cfg" "source = \"wal\"; wal = { slot = \"$TEST_DB\"; };"
init_db "$WORK/relay.cfg"
"$RCONSUME" "$AMQP_URL" declare "$CHURN_Q" "$CHURN_X" "churn.$CHURN_Q.#" || fail "declare the queue"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_log "$WORK/relay.log" "streaming from replication slot" 60
producer_start "$TEST_DSN" 300 20 0.02
wait_sql "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = '$TEST_DB' AND backend_type = 'walsender'" t 30
WAL_KILLS=1 kill_loop "$SECS"
producer_stop
expect_eq "producer batches refused (its sessions are never killed)" "$PRODUCED_FAILED" 0
N=$(sql "SELECT count(*) FROM outbox")
expect_eq "events committed" "$N" $((PRODUCED_OK * 20))
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
wait_sql "SELECT confirmed_flush_lsn >= '$END_LSN' FROM pg_replication_slots WHERE slot_name = '$TEST_DB'" t 180
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited"
stop_relay "$RELAY_PID" 30
[ "$KILLED_WALSENDER" -ge 1 ] || fail "no kill hit the walsender"
STREAMS=$(grep -c "streaming from replication slot" "$WORK/relay.log" || true)
[ "$STREAMS" -ge 2 ] || fail "the stream never started again after a kill"
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0

broker_check "$N"
check_logs_clean
echo "churn (WAL): $SECS s, $KILL_ROUNDS rounds, $KILLED backends killed ($KILLED_WALSENDER walsenders)," \
     "stream started $STREAMS times, $N events, 0 lost, duplicates $BROKER_DUPS; consumer: $BROKER_LINE"
echo "PASS wal churn"
