#!/bin/bash
# Overlapping transactions that commit out of id order.
# Session A: BEGIN; enqueue X/1 (lower id); ...waits...  Session B enqueues
# X/2 and commits while A is still open; then A commits.
#
# What is guaranteed (ordering = aggregate): the relay claims only rows whose
# inserting transaction is older than every transaction still running
# (txid < xmin of the current snapshot) and, of those, only the lowest
# unpublished id of each aggregate. So while A is open, X/2 is not published;
# once A commits, X/1 is published before X/2. The order of an aggregate's
# events is the order of their ids.
# What the application must do: give an aggregate's events ids in the order
# it wants them published, i.e. write them in one transaction, or serialize
# the transactions that write one aggregate (lock the aggregate's own row, as
# it normally does), so that a later-starting writer also gets later ids.
# Cost: a long-running writing transaction (anywhere in the cluster) holds
# back every event committed after it began, not only its own aggregate's.
ENG_TEST=overlap
. "$(dirname "$0")/elib.sh"

fresh_db eng_overlap
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; poll_interval_ms = 100;" ""
init_db "$WORK/relay.cfg"
sql "CREATE TABLE go (k text)"
sql "SELECT outbox_enqueue('Order', 'Z', 'order.sentinel', '{}')" >/dev/null

session obx_sess_a "BEGIN; SELECT outbox_enqueue('Order', 'X', 'order.first', '{\"n\":1}'); $(wait_go a) COMMIT;"
A=$SESSION_PID
wait_in_go obx_sess_a
E2=$(sql "SELECT outbox_enqueue('Order', 'X', 'order.second', '{\"n\":2}')")
Y=$(sql "SELECT outbox_enqueue('Order', 'Y', 'order.other', '{}')")
expect_eq "ids in the order of the enqueues" \
    "$(sql "SELECT string_agg(event_type, ',' ORDER BY id) FROM outbox")" "order.sentinel,order.second,order.other"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_sql "SELECT count(*) FROM outbox WHERE event_type = 'order.sentinel' AND published_at IS NOT NULL" 1 60
sleep 2 # a score of claim cycles; a slower relay can only make this check pass
load_record
expect_eq "X/2 published while X/1 was uncommitted" \
    "$(sql "SELECT count(*) FROM r WHERE event_id = '$E2'")" 0
note "while A was open: Y (another aggregate) published: $(sql "SELECT count(*) > 0 FROM r WHERE event_id = '$Y'")"

sql "INSERT INTO go VALUES ('a')"
wait "$A" || fail "session A failed: $(cat "$WORK/obx_sess_a.out")"
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
kill -TERM "$RELAY"
wait_exit "$RELAY" 30
expect_eq "relay exit code" "$EXIT_RC" 0
load_record
check_all_published
expect_eq "X's events in the order of first publication" \
    "$(sql "SELECT string_agg(o.event_type, ',' ORDER BY f) FROM outbox o JOIN
            (SELECT event_id, min(line) f FROM r WHERE status = 'ok' GROUP BY event_id) x USING (event_id)
            WHERE o.aggregate_id = 'X'")" "order.first,order.second"
echo "PASS overlap"
