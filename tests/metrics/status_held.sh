#!/bin/bash
# `status` lists the aggregates held back (issue 15). Under on_dead =
# "block", with the memory driver failing event type "flaky" always
# (retriable, a backoff of minutes) and rejecting "poison": 22 aggregates
# whose head is flaky (one event behind each), one whose head is dead (three
# behind it) and one that flows. status (text and --json) must count 23 held
# back, list 20 with the dead one first, each with its head id, attempts,
# last error and since when; `status --watch 1` must refresh until
# interrupted, and --watch 0 is refused.
ENG_TEST=status_held
. "$(dirname "$0")/../engine/engine_lib.sh"

fresh_db status_held
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 50; on_dead = \"block\";
    backoff = { initial_ms = 600000; max_ms = 600000; multiplier = 2.0; jitter = 0.0; };" \
    "retriable_event_type = \"flaky\"; permanent_event_type = \"poison\";"
init_db "$WORK/relay.cfg"
sql "SELECT count(*) FROM (
       SELECT outbox_enqueue('F', 'f-' || g, 'flaky', '{}') FROM generate_series(1, 22) g
       UNION ALL SELECT outbox_enqueue('F', 'f-' || g, 'order.created', '{}') FROM generate_series(1, 22) g
       UNION ALL SELECT outbox_enqueue('P', 'p-1', 'poison', '{}')
       UNION ALL SELECT outbox_enqueue('P', 'p-1', 'order.created', '{}') FROM generate_series(1, 3) g
       UNION ALL SELECT outbox_enqueue('C', 'c-1', 'order.created', '{}') FROM generate_series(1, 5) g) x" >/dev/null
POISON_ID=$(sql "SELECT id FROM outbox WHERE event_type = 'poison'")

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_type = 'C' AND published_at IS NOT NULL" 5 60
wait_sql "SELECT count(*) FROM outbox WHERE event_type = 'flaky' AND attempts = 1 AND lease_owner IS NULL" 22 60
wait_sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL" 1 60
stop_relay "$RELAY_PID" 30

"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.txt" || fail "status exited $?"
grep -q "^held back: *23 aggregates (the oldest 20 below)$" "$WORK/status.txt" ||
    fail "status text: $(cat "$WORK/status.txt")"
expect_eq "heads listed" "$(grep -c "head id" "$WORK/status.txt")" 20
grep -q "^  P/p-1  head id $POISON_ID (event .*), attempts 1, dead (on_dead = block) since .*, 3 behind it$" \
    "$WORK/status.txt" || fail "the dead head is not listed as such: $(cat "$WORK/status.txt")"
expect_eq "listed first" "$(grep -m1 "head id" "$WORK/status.txt" | awk '{ print $1 }')" "P/p-1"
grep -q "last error: rejected by memory driver" "$WORK/status.txt" || fail "no last error for the dead head"
grep -q "^  F/f-[0-9]*  head id [0-9]* (event .*), attempts 1, pending since .*Z, next attempt .*Z, 1 behind it$" \
    "$WORK/status.txt" || fail "a flaky head is not listed as pending with its next attempt"

"$OBX_BIN" status -c "$WORK/relay.cfg" --json >"$WORK/status.json" || fail "status --json exited $?"
sql "CREATE TABLE s (j jsonb)"
psql -qAt -d "$TEST_DB" -v ON_ERROR_STOP=1 -v j="$(cat "$WORK/status.json")" <<<"INSERT INTO s VALUES (:'j')" >/dev/null
expect_eq "json: count, heads, dead first, flaky heads" \
    "$(sql "SELECT (j->>'held_back') || '/' || jsonb_array_length(j->'held_back_heads') || '/'
              || (j->'held_back_heads'->0->>'id') || '/' || (j->'held_back_heads'->0->>'dead') || '/'
              || (SELECT count(*) FROM jsonb_array_elements(j->'held_back_heads') h
                  WHERE h->>'last_error' LIKE '%injected failure%' AND (h->>'attempts')::int = 1
                  AND h->>'next_attempt' IS NOT NULL AND (h->>'behind')::int = 1) FROM s")" \
    "23/20/$POISON_ID/true/19"
expect_eq "json: totals" "$(sql "SELECT (j->>'pending') || '/' || (j->>'dead') FROM s")" "47/1"

# --watch refreshes until interrupted
"$OBX_BIN" status -c "$WORK/relay.cfg" --watch 1 >"$WORK/watch.txt" 2>"$WORK/watch.log" &
WATCH=$!
ENG_PIDS+=("$WATCH")
for _ in $(seq 150); do
    [ "$(grep -c "^outbox-relay status at" "$WORK/watch.txt")" -ge 3 ] && break
    kill -0 "$WATCH" 2>/dev/null || fail "status --watch exited: $(cat "$WORK/watch.log")"
    sleep 0.2
done
kill -INT "$WATCH"
wait_exit "$WATCH" 10
expect_eq "status --watch exit code after SIGINT" "$EXIT_RC" 0
[ "$(grep -c "^held back: *23 aggregates" "$WORK/watch.txt")" -ge 3 ] || fail "fewer than 3 reports: $(cat "$WORK/watch.txt")"
"$OBX_BIN" status -c "$WORK/relay.cfg" --watch=0 >/dev/null 2>&1 && fail "--watch=0 was accepted"
"$OBX_BIN" run -c "$WORK/relay.cfg" --watch 1 >/dev/null 2>&1 && fail "--watch was accepted by run"
check_logs_clean
echo "PASS status_held"
