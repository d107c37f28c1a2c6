#!/bin/bash
# Pipelining across batches (issue 13): a worker claims and publishes its next
# batch while the previous one waits for acknowledgements, each on its own
# session (its own transaction, whose row locks are the lease). A claim beside
# a busy batch is made once the driver is answering (the busy batch's first
# answer, or the batch recorded before it); here the memory driver refuses
# events of type order.refused at publish (an answer at once) and completes
# the others after a delay.
# 1. One worker, batch 50, the driver completing after 5 s: while the first
#    batch waits, a second is claimed. Two sessions hold more than a batch
#    and at most two (the second claim may take fewer heads: claimer.c), and
#    a second later no more (no third batch); after a stop a drain publishes
#    everything once.
# 2. Order per aggregate with both lanes busy: one worker, 60 aggregates x 20
#    events and 40 refused events in aggregates of their own, batch 40 (a lane
#    finds the heads the other holds locked and takes other aggregates, and
#    runs behind its own heads), the driver slow (300 ms) and failing 5% of
#    publishes RETRIABLE. More than a batch is seen held at once (two lanes in
#    flight), and no attempt of an aggregate's event N+1 is made before event
#    N's first "ok".
# 3. An output with one_per_aggregate = true is sent heads only, never a run:
#    5 aggregates x 20 events, batch 50, the driver completing after 30 s:
#    the relay has the 5 heads in flight; without the setting, runs (more than 5).
ENG_TEST=pipeline
. "$(dirname "$0")/engine_lib.sh"

# --- 1
fresh_db eng_pipeline
write_cfg "$WORK/held.cfg" "workers = 1; batch_size = 50; lease_seconds = 60; shutdown_timeout_ms = 1000;
    max_transaction_ms = 60000;" \
    "delay_ms = 5000; refuse_event_type = \"order.refused\";"
write_cfg "$WORK/fast.cfg" "workers = 2; batch_size = 50;" ""
init_db "$WORK/held.cfg"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || g, CASE WHEN g % 10 = 0 THEN 'order.refused' ELSE 'order.created' END,
            jsonb_build_object('n', g))) FROM generate_series(1, 250) g" >/dev/null
sql "ANALYZE outbox"
start_relay "$WORK/held.cfg" "$WORK/held.log"
wait_sql "SELECT count(DISTINCT p) FROM pgrowlocks('outbox') l, unnest(l.pids) p" 2 60
HELD=$(sql "$HELD_SQL") # once the second claim's statement has returned: two equal reads
for _ in $(seq 40); do sleep 0.25; NOW=$(sql "$HELD_SQL"); [ "$NOW" = "$HELD" ] && break; HELD=$NOW; done
[ "$HELD" -gt 50 ] && [ "$HELD" -le 100 ] || fail "rows held by two lanes: $HELD, want 51-100"
expect_eq "of them the relay's" \
    "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'outbox-relay'
            AND pid IN (SELECT unnest(pids) FROM pgrowlocks('outbox'))")" 2
sleep 1
expect_eq "rows held a second later (two lanes, no third batch)" "$(sql "$HELD_SQL")" "$HELD"
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 60
expect_eq "exit code after SIGTERM" "$EXIT_RC" 0
expect_eq "rows held after the stop" "$(sql "$HELD_SQL")" 0
drain "$WORK/fast.cfg" "$WORK/fast.log" 120
load_record
check_all_published
expect_eq "duplicates" "$(dup_count)" 0

# --- 2
fresh_db eng_pipeline_order
rm -f "$REC"
write_cfg "$WORK/order.cfg" "workers = 1; batch_size = 40; lease_seconds = 30; max_attempts = 20;
    backoff = { initial_ms = 20; max_ms = 200; multiplier = 2.0; jitter = 0.2; };" \
    "retriable_rate = 0.05; delay_ms = 300; refuse_event_type = \"order.refused\";"
init_db "$WORK/order.cfg"
sql "SELECT count(outbox_enqueue('Order', CASE WHEN g % 31 = 0 THEN 'refused-' || g ELSE 'agg-' || (g % 60) END,
            CASE WHEN g % 31 = 0 THEN 'order.refused' ELSE 'order.created' END, jsonb_build_object('n', g)))
     FROM generate_series(1, 1240) g" >/dev/null
REFUSED=$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.refused'")
sql "ANALYZE outbox"
start_relay "$WORK/order.cfg" "$WORK/order.log" --drain
DRAINER=$RELAY_PID
wait_sql "SELECT ($HELD_SQL) > 40" t 60
wait_exit "$DRAINER" 170
[ "$EXIT_RC" -eq 0 ] || fail "run --drain exited $EXIT_RC"
load_record
expect_eq "rows not published (but the refused ones)" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND event_type <> 'order.refused'")" 0
expect_eq "refused rows dead" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" "$REFUSED"
expect_eq "rows still held" "$(sql "$HELD_SQL")" 0
RETRIES=$(sql "SELECT count(*) FROM r WHERE status = 'retriable'")
[ "$RETRIES" -ge 10 ] || fail "only $RETRIES retriable failures: the test did not exercise retries"
check_order

# --- 3
fresh_db eng_pipeline_heads
rm -f "$REC"
write_cfg "$WORK/runs.cfg" "workers = 1; batch_size = 50; lease_seconds = 60; shutdown_timeout_ms = 1000;
    max_transaction_ms = 60000;" "delay_ms = 30000;"
sed 's/driver = "memory";/driver = "memory"; one_per_aggregate = true;/' "$WORK/runs.cfg" >"$WORK/heads.cfg"
grep -q one_per_aggregate "$WORK/heads.cfg" || fail "heads.cfg lacks one_per_aggregate"
init_db "$WORK/heads.cfg"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 5), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 100) g" >/dev/null
sql "ANALYZE outbox"
# in_flight CFG LOG: messages the relay has sent a second after it locked its
# first rows and not seen answered when stopped (the driver records each, aborted)
in_flight() {
    rm -f "$REC"
    start_relay "$1" "$2"
    wait_sql "SELECT ($HELD_SQL) > 0" t 60
    sleep 1
    kill -TERM "$RELAY_PID"
    wait_exit "$RELAY_PID" 60
    expect_eq "exit code after SIGTERM" "$EXIT_RC" 0
    expect_eq "published before the stop" "$(grep -c '"status":"ok"' "$REC" || true)" 0
    SENT=$(wc -l <"$REC")
}
in_flight "$WORK/heads.cfg" "$WORK/heads.log"
expect_eq "messages in flight with one_per_aggregate (the heads)" "$SENT" 5
HEADS=$SENT
in_flight "$WORK/runs.cfg" "$WORK/runs.log"
[ "$SENT" -gt 5 ] || fail "messages in flight without one_per_aggregate: $SENT, want runs (more than 5)"
RUNS=$SENT
rm -f "$REC" # the stopped relays' aborted attempts are not the drain's order
drain "$WORK/fast.cfg" "$WORK/fast.log" 120
load_record
check_all_published
check_order
check_logs_clean
echo "one_per_aggregate: $HEADS messages in flight, $RUNS without it"
echo "pipeline: $HELD rows held by one worker's two lanes; 1200 events over 60 aggregates in order" \
     "beside $REFUSED refused ones, $RETRIES retriable failures, duplicates $(dup_count)"
echo "PASS pipeline"
