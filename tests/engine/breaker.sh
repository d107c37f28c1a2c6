#!/bin/bash
# An output that refuses everything is an outage, not a backlog of dead
# events (issue 49, item 7; the circuit breaker in core/host/health.c), once
# per source (SOURCE_MODE=poll|wal|cursor). The memory "broker" answers every
# message as refused for good while $WORK/refuse exists (a webhook's 404
# after a bad deploy): 200 events wait in the outbox when it starts refusing,
# 200 more are written while it refuses, then it recovers. Every event is
# published, none is dead, each aggregate's order holds, and the log says
# the output was taken as at fault. A poison event afterwards (refused
# while the others are taken) is still dead-lettered.
. "$(dirname "$0")/source_lib.sh" breaker
source_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; circuit_breaker = true;" \
    "refuse_all_file = \"$WORK/refuse\"; permanent_event_type = \"order.poison\";"
CFG=$WORK/relay.cfg
init_db "$CFG"

# enqueue FROM TO TYPE: events FROM..TO over 20 aggregates, 10 a transaction
enqueue() {
    local from
    for ((from = $1; from <= $2; from += 10)); do
        echo "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), '$3', jsonb_build_object('n', g)))
              FROM generate_series($from, $((from + 9))) g;"
    done | psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f - >/dev/null
}
dead_count() {
    if [ "$MODE" = poll ]; then sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL"
    else sql "SELECT count(*) FROM outbox_dead_letter"; fi
}

enqueue 1 200 order.created
touch "$WORK/refuse"
start_relay "$CFG" "$WORK/relay.log"
wait_log "$WORK/relay.log" "messages in a row refused for good and nothing acknowledged since" 60
enqueue 201 400 order.created
sleep 3 # the output refuses on, probed, while the backlog waits
expect_eq "dead while the output refused everything" "$(dead_count)" 0
rm -f "$WORK/refuse"
wait_distinct "$REC" 400 120 agg-
wait_log "$WORK/relay.log" "is back after" 60

# a poison event now: the output takes the others, so it is the event's own fault
sql "SELECT outbox_enqueue('Order', 'poison', 'order.poison', '{}'::jsonb)" >/dev/null
enqueue 401 420 order.created
for ((i = 0; i < 600 && $(dead_count) < 1; i++)); do sleep 0.2; done
wait_distinct "$REC" 420 120 agg-
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 60
load_record
expect_eq "events published" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 420
expect_eq "dead: the poison event alone" "$(dead_count)" 1
if [ "$MODE" = poll ]; then
    expect_eq "the dead event" "$(sql "SELECT event_type FROM outbox WHERE dead_at IS NOT NULL")" order.poison
    check_order
else
    expect_eq "the dead event" "$(sql "SELECT event_type FROM outbox_dead_letter")" order.poison
    sql "DELETE FROM outbox WHERE event_type = 'order.poison'" >/dev/null
    wal_expected
    check_wal_order
fi
grep -q "taken as the output's fault" "$WORK/relay.log" || fail "the log does not say the output was at fault"
check_logs_clean
echo "PASS breaker ($MODE): 420 published, 0 dead while the output refused everything, order held, the poison dead; $(dup_count) duplicates"
