#!/bin/bash
# A hot aggregate does not starve the others (issue 11). One worker, batch
# 10, ordering aggregate: 10,000 pending events of aggregate A, then one of B,
# then the relay starts; while it drains A, an event of C is committed.
# With one worker a claim's messages are consecutive lines of the broker log
# and a claim has at most 10 of them, so:
# - B (committed before the start) is in one of the first two claims: among
#   the first 20 lines;
# - C is in one of the first two claims after its commit: the claim running
#   at the commit ends at most 10 lines after the log's length then (N), so
#   C's line is at most N + 30.
# A still drains in id order, every row is claimed exactly once (the relay's
# claimed total) and published exactly once.
ENG_TEST=fair_hot
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_fair_hot
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 10;" ""
init_db "$WORK/relay.cfg"
sql "SELECT count(outbox_enqueue('Order', 'A', 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 10000) g" >/dev/null
sql "SELECT outbox_enqueue('Order', 'B', 'order.created', '{}')" >/dev/null
sql "ANALYZE outbox"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
for ((i = 0; i < 600 && $(record_lines) < 300; i++)); do sleep 0.1; done
[ "$(record_lines)" -ge 300 ] || fail "fewer than 300 events published in 60 s"
sql "SELECT outbox_enqueue('Order', 'C', 'order.created', '{}')" >/dev/null
N=$(record_lines)
PENDING_A=$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'A' AND published_at IS NULL")
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 300
stop_relay "$PID" 30

load_record
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
expect_eq "rows claimed (each exactly once)" "$(relay_stat "$WORK/relay.log" claimed)" 10002
B_LINE=$(sql "SELECT min(line) FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'B'")
C_LINE=$(sql "SELECT min(line) FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'C'")
note "B at line $B_LINE; C committed with $N lines in the log and $PENDING_A events of A pending, C at line $C_LINE"
[ "$B_LINE" -le 20 ] || fail "B published at line $B_LINE: not within the first two claims"
[ "$C_LINE" -le $((N + 30)) ] || fail "C published at line $C_LINE, more than two claims after its commit (log had $N lines)"
expect_eq "A's events published out of id order" \
    "$(sql "SELECT count(*) FROM (SELECT o.id, lag(o.id) OVER (ORDER BY r.line) AS prev
            FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'A' AND r.status = 'ok') x
            WHERE prev > id")" 0
check_logs_clean
echo "PASS fair_hot"
