#!/bin/bash
# WAL mode's /metrics: a relay (memory driver, completing from its thread,
# 5% random retriable failures, event type "order.poison" rejected) streams
# 2,000 events over two routes while it is scraped. Once the slot has
# confirmed past the last commit (every event decided), the counters must
# equal what the broker log and the dead-letter table say: one
# commit-to-acknowledgement and one publish-duration observation per
# published event, published, retried and dead-lettered per output and per
# route, nothing in flight; every histogram consistent.
ENG_TEST=walmetrics
. "$(dirname "$0")/wal_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}

fresh_wal_db wal_metrics
PORT=$("$MC" freeport)
write_wal_cfg "$WORK/relay.cfg" "max_attempts = 100;
    backoff = { initial_ms = 10; max_ms = 50; multiplier = 2.0; jitter = 0.0; };" \
    "retriable_rate = 0.05; permanent_event_type = \"order.poison\"; delay_ms = 2; threaded = true;" \
    "metrics = { listen = \"127.0.0.1:$PORT\"; };
routes = ( { event_type = \"order.*\"; aggregate_type = \"Order\"; output = \"mem\"; destination = \"orders\"; },
           { output = \"mem\"; destination = \"other\"; } );"
init_db "$WORK/relay.cfg"

. "$(dirname "$0")/../metrics/scrape.sh"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_log "$WORK/relay.log" "streaming from replication slot" 60

enqueue_txns 1800 200 100
enqueue_txns 190 50 95 user.created # route 2: another event type
sql "SELECT outbox_enqueue('Order', 'p-' || g, 'order.poison', '{}'::jsonb) FROM generate_series(1, 10) g" >/dev/null
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
scrape_until "SELECT coalesce(confirmed_flush_lsn >= '$END_LSN', false) FROM pg_replication_slots
              WHERE slot_name = '$TEST_DB'" t "the slot was not confirmed past the last commit"
scrape "$WORK/after.txt"
check_histograms "$WORK/after.txt"
stop_relay "$RELAY" 60

load_record
wal_expected
sql "DELETE FROM ev WHERE event_id IN (SELECT event_id FROM outbox_dead_letter)" >/dev/null
check_wal_published
PUBLISHED=$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")
RETRIES=$(sql "SELECT count(*) FROM r WHERE status = 'retriable'")
DEAD=$(sql "SELECT count(*) FROM outbox_dead_letter")
expect_eq "events published" "$PUBLISHED" 1990
expect_eq "dead letters" "$DEAD" 10
[ "$RETRIES" -ge 20 ] || fail "only $RETRIES retriable failures: retries were not exercised"
A=$WORK/after.txt
expect_eq "commit-to-ack observations" "$(value "$A" 'outbox_relay_commit_to_ack_seconds_count{output="mem"}')" "$PUBLISHED"
expect_eq "publish duration observations" "$(value "$A" 'outbox_relay_publish_duration_seconds_count{output="mem"}')" "$PUBLISHED"
expect_eq "outbox_relay_published_total" "$(value "$A" outbox_relay_published_total)" "$PUBLISHED"
expect_eq "published{mem}" "$(value "$A" 'outbox_relay_output_published_total{output="mem"}')" "$PUBLISHED"
expect_eq "retried{mem}" "$(value "$A" 'outbox_relay_output_retried_total{output="mem"}')" "$RETRIES"
expect_eq "dead-lettered{mem}" "$(value "$A" 'outbox_relay_output_dead_lettered_total{output="mem"}')" "$DEAD"
expect_eq "route 1 published" "$(value "$A" 'outbox_relay_route_published_total{route="1",output="mem"}')" \
    "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok' AND destination = 'orders'")"
expect_eq "route 2 published" "$(value "$A" 'outbox_relay_route_published_total{route="2",output="mem"}')" 190
expect_eq "route 1 dead-lettered" "$(value "$A" 'outbox_relay_route_dead_lettered_total{route="1",output="mem"}')" "$DEAD"
expect_eq "in flight{mem}" "$(value "$A" 'outbox_relay_output_in_flight{output="mem"}')" 0
# the stream thread beats (a stuck stream turns /healthz and the watchdog red)
BEAT=$(grep -F 'outbox_relay_thread_heartbeat_age_seconds{thread="wal-stream-0"} ' "$A" | awk '{ print $NF }')
[ -n "$BEAT" ] || fail "no heartbeat of the wal stream thread in /metrics"
awk -v b="$BEAT" 'BEGIN { exit !(b < 30) }' || fail "the wal stream's heartbeat is $BEAT s old"
grep -q 'thread="worker' "$A" && fail "/metrics names worker threads in WAL mode"
check_logs_clean
drop_wal_slots
note "$SCRAPES scrapes during the run; $RETRIES retriable failures"
echo "PASS wal metrics: $PUBLISHED published, $RETRIES retried, $DEAD dead-lettered, each observed at /metrics"
