#!/bin/bash
# Overlapping transactions writing one aggregate.
# Session A: BEGIN; enqueue X/1; ...stays open...  Session B: enqueue X/2.
#
# What is guaranteed (ordering = aggregate):
# - An insert into the outbox takes a transaction-scoped lock on its
#   aggregate and only then draws its id (init-db's trigger). So B's insert of
#   X/2 WAITS until A ends: an aggregate's ids are drawn in commit order and a
#   lower id of an aggregate is never still uncommitted when a higher one is
#   visible. Another aggregate (Y) is not held up by A.
# - The relay claims only the lowest unpublished id of each aggregate, so X/1
#   is published before X/2.
# What the application must do: nothing special; but a transaction that writes
# an aggregate's event holds every other writer of that aggregate until it
# ends, so keep such transactions short (and take aggregates in a stable order
# when one transaction writes several, to avoid deadlocks).
ENG_TEST=overlap
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_overlap
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; poll_interval_ms = 100;" ""
init_db "$WORK/relay.cfg"
sql "CREATE TABLE go (k text)"
sql "SELECT outbox_enqueue('Order', 'Z', 'order.sentinel', '{}')" >/dev/null

session obx_sess_a "BEGIN; SELECT outbox_enqueue('Order', 'X', 'order.first', '{\"n\":1}'); $(wait_go a) COMMIT;"
A=$SESSION_PID
wait_in_go obx_sess_a
session obx_sess_b "SELECT outbox_enqueue('Order', 'X', 'order.second', '{\"n\":2}');"
B=$SESSION_PID
wait_blocked obx_sess_b
# another aggregate is not held up by A (bounded: a hang here is the failure)
Y=$(timeout 30 psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "SELECT outbox_enqueue('Order', 'Y', 'order.other', '{}')") \
    || fail "enqueue of another aggregate blocked behind A"

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_sql "SELECT count(*) FROM outbox WHERE event_type = 'order.sentinel' AND published_at IS NOT NULL" 1 60
sleep 2 # a score of claim cycles; a slower relay can only make this check pass
load_record
expect_eq "X events published while X/1 was uncommitted" \
    "$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'X'")" 0
expect_eq "X/2 written while A was open" "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'X'")" 0
note "while A was open: Y (another aggregate) published: $(sql "SELECT count(*) > 0 FROM r WHERE event_id = '$Y'")"

sql "INSERT INTO go VALUES ('a')"
wait "$A" || fail "session A failed: $(cat "$WORK/obx_sess_a.out")"
wait "$B" || fail "session B failed: $(cat "$WORK/obx_sess_b.out")"
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
