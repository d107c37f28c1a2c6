#!/bin/bash
# Failover, poll mode: a PRIVATE primary and a streaming standby made from it
# with pg_basebackup -R (ports ENGINE_FAILOVER_PORT or free_ports, and the next one),
# synchronous (synchronous_standby_names = '*': a commit the producer saw is
# on the standby). The relay and the producer use one multi-host conninfo
# (host=a,b port=p1,p2 target_session_attrs=read-write). Mid-run the primary
# crashes (immediate shutdown) and the standby is promoted: the same relay
# process must find the new primary and relay everything. Then, on the
# broker's side (a RabbitMQ queue of the test's own, read back): every event
# of the new primary's table received, none unknown, order kept per
# aggregate; every batch whose commit the producer saw is in the table;
# duplicates counted; the time from the promotion to the first event
# published on the new primary printed (a figure, not a check).
ENG_TEST=failover
. "$(dirname "$0")/engine_lib.sh"
. "$(dirname "$0")/churn_lib.sh"

failover_pair "${ENGINE_FAILOVER_PORT:-$(free_ports 2)}" eng_failover
churn_cfg "$WORK/relay.cfg"
init_db "$WORK/relay.cfg"
"$RCONSUME" "$AMQP_URL" declare "$CHURN_Q" "$CHURN_X" "churn.$CHURN_Q.#" || fail "declare the queue"
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
producer_start "$TEST_DSN" 300 20 0.02
wait_sql "SELECT count(*) >= 3000 FROM outbox WHERE published_at IS NOT NULL" t 90
BEFORE=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB' AND application_name LIKE 'outbox-relay%'")" -gt 0 ] ||
    fail "the relay is not connected to the primary"

# the primary crashes; the standby is promoted
pg1 pg-crash
pg2 pg-promote
T_PROMOTED=$(date +%s%N)
export PGPORT=$P2
expect_eq "the standby is a primary" "$(sql "SELECT pg_is_in_recovery()")" f
PROMOTED_AT=$(sql "SELECT now()")
wait_sql "SELECT count(*) > 0 FROM outbox WHERE published_at > '$PROMOTED_AT'" t 120
T_FOLLOWED=$(date +%s%N)
# go on for a while on the new primary
wait_sql "SELECT count(*) >= 3000 FROM outbox WHERE published_at > '$PROMOTED_AT'" t 120
producer_stop
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 180
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited"
stop_relay "$RELAY_PID" 30
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0

# every batch the producer saw committed is on the new primary
sql "CREATE TABLE ok_batch (k bigint)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy ok_batch FROM '$WORK/producer.ok'" >/dev/null
expect_eq "events of committed batches missing on the new primary" \
    "$(sql "SELECT count(*) * 20 - (SELECT count(*) FROM outbox o JOIN ok_batch b
            ON ((o.payload->>'n')::bigint - 1) / 20 = b.k) FROM ok_batch")" 0
N=$(sql "SELECT count(*) FROM outbox")
broker_check "$N"
check_logs_clean
FOLLOW_MS=$(((T_FOLLOWED - T_PROMOTED) / 1000000))
echo "failover (poll): $BEFORE published on the old primary, $N events in all ($PRODUCED_OK batches committed," \
     "$PRODUCED_FAILED refused or unknown during the failover), 0 lost, duplicates $BROKER_DUPS;" \
     "first event published on the new primary ${FOLLOW_MS} ms after the promotion; consumer: $BROKER_LINE"
echo "PASS failover"
