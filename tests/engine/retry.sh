#!/bin/bash
# Retry schedule, permanent failures, max_attempts and requeue.
# A: memory fail_attempts = 3, backoff 200 ms x2, jitter 0: every event has
#    attempts = 4, its record lines are retriable 1,2,3 then ok 4, and attempt
#    i+1 comes at least 200*2^(i-1) ms after attempt i (a lower bound that
#    follows from the config, not a race). An event of the permanent type goes
#    dead at attempt 1 with the driver's error; the next event of its
#    aggregate is published (on_dead = skip).
# B: fail_attempts = 100, max_attempts = 3: dead with "gave up after 3 attempts".
# C: with a config whose driver no longer fails: `requeue EVENT_ID` brings one
#    dead event back and it is published; `requeue --all` the others.
ENG_TEST=retry
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_retry
write_cfg "$WORK/a.cfg" "workers = 2; batch_size = 50; max_attempts = 10;
    backoff = { initial_ms = 200; max_ms = 10000; multiplier = 2.0; jitter = 0.0; };" \
    "fail_attempts = 3; permanent_event_type = \"order.poison\";"
write_cfg "$WORK/b.cfg" "workers = 2; batch_size = 50; max_attempts = 3;
    backoff = { initial_ms = 50; max_ms = 10000; multiplier = 2.0; jitter = 0.0; };" \
    "fail_attempts = 100;"
write_cfg "$WORK/c.cfg" "workers = 1; batch_size = 50;" ""
init_db "$WORK/a.cfg"

# --- A
sql "SELECT count(outbox_enqueue('Order', 'r-' || g, 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 10) g" >/dev/null
POISON=$(sql "SELECT outbox_enqueue('Order', 'p', 'order.created', '{\"n\":1}');
              SELECT outbox_enqueue('Order', 'p', 'order.poison', '{\"n\":2}')" | tail -1)
sql "SELECT outbox_enqueue('Order', 'p', 'order.created', '{\"n\":3}')" >/dev/null
drain "$WORK/a.cfg" "$WORK/a.log" 120
load_record
expect_eq "normal events published with attempts = 4" \
    "$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.created' AND attempts = 4 AND published_at IS NOT NULL")" 12
expect_eq "events whose record is not retriable 1,2,3 then ok 4" \
    "$(sql "SELECT count(*) FROM (SELECT event_id, string_agg(status || attempt, ',' ORDER BY line) s
            FROM r GROUP BY event_id) x JOIN outbox o USING (event_id)
            WHERE o.event_type = 'order.created' AND s <> 'retriable1,retriable2,retriable3,ok4'")" 0
# attempt i+1 at least initial * mult^(i-1) after attempt i (jitter 0)
expect_eq "retries earlier than the backoff allows" \
    "$(sql "SELECT count(*) FROM (SELECT attempt, t_us - lag(t_us) OVER (PARTITION BY event_id ORDER BY attempt) AS gap
            FROM r) x WHERE attempt > 1 AND gap < 200000 * 2 ^ (attempt - 2)")" 0
expect_eq "retry gaps measured" "$(sql "SELECT count(*) FROM r WHERE attempt > 1")" 36
note "A: smallest gap per attempt (ms): $(sql "SELECT string_agg(a || ':' || g, ' ' ORDER BY a) FROM (
      SELECT attempt a, min(gap) / 1000 g FROM (SELECT attempt, t_us - lag(t_us) OVER (PARTITION BY event_id ORDER BY attempt) gap FROM r) x
      WHERE attempt > 1 GROUP BY attempt) y")"
expect_eq "poison event: dead, attempts, last_error" \
    "$(sql "SELECT dead_at IS NOT NULL, attempts, last_error FROM outbox WHERE event_id = '$POISON'")" \
    "t|1|rejected by memory driver"
expect_eq "poison event's record" \
    "$(sql "SELECT string_agg(status || attempt, ',') FROM r WHERE event_id = '$POISON'")" "permanent1"
expect_eq "the event after the poison one (on_dead = skip) published" \
    "$(sql "SELECT published_at IS NOT NULL FROM outbox WHERE aggregate_id = 'p' AND payload->>'n' = '3'")" t

# --- B
sql "SELECT count(outbox_enqueue('Order', 'm-' || g, 'order.max', jsonb_build_object('n', g)))
     FROM generate_series(1, 5) g" >/dev/null
drain "$WORK/b.cfg" "$WORK/b.log" 120
load_record
expect_eq "max_attempts: dead with attempts = 3 and the reason" \
    "$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.max' AND dead_at IS NOT NULL AND attempts = 3
            AND last_error LIKE 'gave up after 3 attempts%'")" 5
expect_eq "max_attempts: record lines per event" \
    "$(sql "SELECT DISTINCT string_agg(status || attempt, ',' ORDER BY line) FROM r JOIN outbox o USING (event_id)
            WHERE o.event_type = 'order.max' GROUP BY event_id")" "retriable1,retriable2,retriable3"
note "B: last_error: $(sql "SELECT last_error FROM outbox WHERE event_type = 'order.max' LIMIT 1")"

# --- C
ONE=$(sql "SELECT event_id FROM outbox WHERE event_type = 'order.max' ORDER BY id LIMIT 1")
set +e
"$OBX_BIN" requeue -c "$WORK/c.cfg" >"$WORK/requeue0.out" 2>&1
rc=$?
set -e
expect_eq "requeue without ids or --all: exit code" "$rc" 2
OUT=$("$OBX_BIN" requeue -c "$WORK/c.cfg" "$ONE") || fail "requeue $ONE failed"
expect_eq "requeue one" "$OUT" "requeued 1 dead events"
drain "$WORK/c.cfg" "$WORK/c1.log" 120
expect_eq "the requeued event published" \
    "$(sql "SELECT published_at IS NOT NULL AND dead_at IS NULL FROM outbox WHERE event_id = '$ONE'")" t
expect_eq "still dead" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 5
OUT=$("$OBX_BIN" requeue -c "$WORK/c.cfg" --all) || fail "requeue --all failed"
expect_eq "requeue --all" "$OUT" "requeued 5 dead events"
drain "$WORK/c.cfg" "$WORK/c2.log" 120
load_record
check_all_published
expect_eq "dead after requeue --all" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "the poison event published once its type is accepted" \
    "$(sql "SELECT count(*) FROM r WHERE event_id = '$POISON' AND status = 'ok'")" 1
STATUS=$("$OBX_BIN" status -c "$WORK/c.cfg" --json)
expect_eq "status --json" "$(echo "$STATUS" | jq -c '{pending, in_flight, dead}')" '{"pending":0,"in_flight":0,"dead":0}'
check_logs_clean
echo "PASS retry"
