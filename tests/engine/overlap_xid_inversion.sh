#!/bin/bash
# A lower id must not be overtaken when its transaction got its xid AFTER
# the transaction of the higher id (the xmin watermark orders by xid, ids
# come from the sequence). Realistic sequence:
#   A: BEGIN; UPDATE its domain row (A gets xid 100)
#   B: BEGIN; enqueue X (B gets xid 101)                  ... B stays open
#   A: enqueue X; COMMIT
# Without more, A's X event gets id 2 and commits while id 1 (B) is still
# invisible: xmin = 101 > 100 makes id 2 claimable and it was published first
# (found before init-db's per-aggregate enqueue lock existed). Now A's insert
# must wait for B, draw the higher id, and X/1 is published first.
# (pg_current_xact_id() stands for A's domain write.)
ENG_TEST=xidinv
. "$(dirname "$0")/elib.sh"

fresh_db eng_xidinv
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; poll_interval_ms = 100;" ""
init_db "$WORK/relay.cfg"
sql "CREATE TABLE go (k text)"
sql "SELECT outbox_enqueue('Order', 'Z', 'order.sentinel', '{}')" >/dev/null

session obx_sess_a "BEGIN; SELECT pg_current_xact_id(); $(wait_go a1)
                    SELECT outbox_enqueue('Order', 'X', 'order.second', '{\"n\":2}'); COMMIT;"
A=$SESSION_PID
wait_in_go obx_sess_a
session obx_sess_b "BEGIN; SELECT outbox_enqueue('Order', 'X', 'order.first', '{\"n\":1}'); $(wait_go b) COMMIT;"
B=$SESSION_PID
wait_in_go obx_sess_b
sql "INSERT INTO go VALUES ('a1')"
wait_blocked obx_sess_a

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_sql "SELECT count(*) FROM outbox WHERE event_type = 'order.sentinel' AND published_at IS NOT NULL" 1 60
sleep 2 # a score of claim cycles; a slower relay can only make this check pass
load_record
OVERTAKEN=$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'X'")

sql "INSERT INTO go VALUES ('b')"
wait "$B" || fail "session B failed: $(cat "$WORK/obx_sess_b.out")"
wait "$A" || fail "session A failed: $(cat "$WORK/obx_sess_a.out")"
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
kill -TERM "$RELAY"
wait_exit "$RELAY" 30
load_record
check_all_published
ORDER=$(sql "SELECT string_agg(o.event_type, ',' ORDER BY f) FROM outbox o JOIN
             (SELECT event_id, min(line) f FROM r WHERE status = 'ok' GROUP BY event_id) x USING (event_id)
             WHERE o.aggregate_id = 'X'")
echo "overlap_xid_inversion: X/2 attempted while X/1 uncommitted: $OVERTAKEN; publication order: $ORDER"
expect_eq "X events attempted while the lower id X/1 was uncommitted" "$OVERTAKEN" 0
expect_eq "X's events in the order of first publication" "$ORDER" "order.first,order.second"
echo "PASS overlap_xid_inversion"
