#!/bin/bash
# The cursor source's own rules (its crash, order, standby, restart and purge
# tests are WAL mode's, run as cursor_*):
# 1. init-db turns a poll-mode outbox into a cursor one: the rows still
#    pending are relayed, the published ones never; init-db runs twice.
# 2. The read rule: while a transaction that took its id early is open, the
#    events committed after it wait (the documented cost); once it commits,
#    its own events (one of an aggregate that others wrote meanwhile, one of
#    a new aggregate, placed below everything read later) arrive, none is
#    skipped, and each aggregate is in commit order.
# 3. No write per event: no outbox row the relay read changed its place on
#    disk (ctid), and the cursor's row is saved far less often than once per
#    event.
# 4. A poison event is dead-lettered, its aggregate's later events follow;
#    status counts it; requeue --all sends it again.
# 5. retention = "delete": the rows the cursor passed are deleted in ranges.
WAL_AS=cursor
ENG_TEST=cursorrules
. "$(dirname "$0")/../wal/wal_lib.sh"

fresh_db cursor_rules
write_cfg "$WORK/poll.cfg" "" "delay_ms = 1;"
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 1; permanent_event_type = \"order.poison\";"
write_wal_cfg "$WORK/fixed.cfg" "" "delay_ms = 1;"

# --- 1
init_db "$WORK/poll.cfg"
enqueue_bulk 100 10
sql "UPDATE outbox SET published_at = now() WHERE id <= $(nth_id 39)" >/dev/null
init_db "$WORK/relay.cfg"
init_db "$WORK/relay.cfg"
expect_eq "rows placed for the cursor, rows left out" \
    "$(sql "SELECT count(cursor_xid) || ',' || count(*) FILTER (WHERE cursor_xid IS NULL) FROM outbox")" "60,40"
sql "CREATE TABLE placed_before AS SELECT id, ctid::text AS place FROM outbox" >/dev/null
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_log "$WORK/relay.log" "$STREAMING_LINE" 30
for ((i = 0; i < 300 && $(ok_events) < 60; i++)); do sleep 0.1; done
expect_eq "pending rows relayed" "$(ok_events)" 60

# --- 2
mkfifo "$WORK/held.in"
psql -qAtX -v ON_ERROR_STOP=1 -d "$TEST_DB" <"$WORK/held.in" >"$WORK/held.out" 2>&1 &
HELD_PID=$!
exec 7>"$WORK/held.in"
echo "BEGIN; SELECT pg_current_xact_id();" >&7
wait_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB' AND backend_xid IS NOT NULL
          AND state = 'idle in transaction'" 1 30
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.after_held', jsonb_build_object('n', g)))
     FROM generate_series(1, 200) g" >/dev/null
sleep 1 # five poll intervals: by the rule, none of them may go out yet
expect_eq "events committed after the open transaction's id, published while it is open" \
    "$(($(ok_events) - 60))" 0
echo "SELECT outbox_enqueue('Order', 'agg-3', 'order.held', '{}'::jsonb);
      SELECT outbox_enqueue('Order', 'held-z', 'order.held', '{}'::jsonb); COMMIT;" >&7
exec 7>&-
wait "$HELD_PID" || fail "the held session failed: $(cat "$WORK/held.out")"
for ((i = 0; i < 300 && $(ok_events) < 262; i++)); do sleep 0.1; done
expect_eq "events published once the transaction ended" "$(ok_events)" 262

# --- 3
expect_eq "outbox rows the relay rewrote" \
    "$(sql "SELECT count(*) FROM outbox o JOIN placed_before b USING (id) WHERE o.ctid::text <> b.place")" 0
SAVES=$(sql "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'outbox_cursor'")

# --- 4
sql "SELECT outbox_enqueue('Order', 'poisoned', CASE WHEN g = 2 THEN 'order.poison' ELSE 'order.created' END, '{}'::jsonb)
     FROM generate_series(1, 4) g" >/dev/null
for ((i = 0; i < 300 && $(ok_events) < 265; i++)); do sleep 0.1; done
stop_relay "$RELAY_PID" 30
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE event_type = 'order.poison'")" 1
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.out" || fail "status failed"
grep -q "dead: *1" "$WORK/status.out" && grep -q "pending: *0" "$WORK/status.out" ||
    fail "status: $(cat "$WORK/status.out")"
expect_eq "requeue" "$("$OBX_BIN" requeue -c "$WORK/fixed.cfg" --all)" "requeued 1 dead events"
drain "$WORK/fixed.cfg" "$WORK/fixed.log" 60

load_record
sql "DROP TABLE IF EXISTS ev; CREATE TABLE ev AS SELECT event_id, aggregate_id, id AS n FROM outbox
     WHERE cursor_xid IS NOT NULL" >/dev/null
check_wal_published
sql "DELETE FROM ev WHERE aggregate_id = 'poisoned'" >/dev/null # on_dead = skip: its followers went first
check_wal_order
expect_eq "rows left out by init-db that were published" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.cursor_xid IS NULL")" 0
expect_eq "the requeued event published" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE r.status = 'ok' AND o.event_type = 'order.poison'")" 1

# --- 5
write_wal_cfg "$WORK/delete.cfg" "retention = \"delete\";" "delay_ms = 1;"
start_relay "$WORK/delete.cfg" "$WORK/delete.log"
wait_sql "SELECT count(*) FROM outbox WHERE cursor_xid IS NOT NULL" 0 60
stop_relay "$RELAY_PID" 30
expect_eq "rows the cursor never read, kept" "$(sql "SELECT count(*) FROM outbox")" 40
check_logs_clean
echo "PASS cursor rules: 262 events read, cursor saved $SAVES times, duplicates: $(dup_count)"
