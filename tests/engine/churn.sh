#!/bin/bash
# Connection churn, poll mode: a producer writes events (batches of 20 over
# 300 aggregates) while one relay (2 workers, RabbitMQ with confirms) relays
# them, and its backends are terminated with pg_terminate_backend every 1-5 s
# for CHURN_SECONDS (120): all of them, one at random, or one inside a
# transaction. Only the relay's own sessions of the test database are killed.
# The same relay process must survive every kill and drain; then, counted on
# the broker's side (the queue read back): every committed event received,
# nothing unknown, each aggregate's events first delivered in order, no
# message with missing properties; duplicates counted and printed.
ENG_TEST=churn
. "$(dirname "$0")/engine_lib.sh"
. "$(dirname "$0")/churn_lib.sh"
eng_extra_cleanup() { churn_queue_cleanup; }

SECS=${CHURN_SECONDS:-120}
fresh_db eng_churn
churn_cfg "$WORK/relay.cfg"
init_db "$WORK/relay.cfg"
"$RCONSUME" "$AMQP_URL" declare "$CHURN_Q" "$CHURN_X" "churn.$CHURN_Q.#" || fail "declare the queue"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
producer_start "$TEST_DSN" 300 20 0.02
wait_sql "SELECT count(*) > 0 FROM outbox WHERE published_at IS NOT NULL" t 60
kill_loop "$SECS"
producer_stop
expect_eq "producer batches refused (its sessions are never killed)" "$PRODUCED_FAILED" 0
N=$(sql "SELECT count(*) FROM outbox")
expect_eq "events committed" "$N" $((PRODUCED_OK * 20))
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 180
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited"
stop_relay "$RELAY_PID" 30
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
[ "$KILLED" -ge $((KILL_ROUNDS / 2)) ] || fail "only $KILLED backends killed in $KILL_ROUNDS rounds"
[ "$KILLED_IN_TXN" -ge 1 ] || fail "no kill hit a relay session inside a transaction"
# a session killed while idle says so in the server's notice; one killed in
# a statement also logs that it reconnects
LOST=$(grep -cE "terminating connection due to administrator command|database connection lost" "$WORK/relay.log" || true)
[ "$LOST" -gt 0 ] || fail "the relay never logged a lost connection"

broker_check "$N"
check_logs_clean
echo "churn (poll): $SECS s, $KILL_ROUNDS rounds, $KILLED backends killed ($KILLED_IN_TXN in a transaction)," \
     "$N events, 0 lost, duplicates $BROKER_DUPS, kill notices and reconnects logged $LOST; consumer: $BROKER_LINE"
echo "PASS churn"
