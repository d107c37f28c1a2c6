#!/bin/bash
# WAL mode, order per aggregate under failures: 10,000 events over 1,000
# aggregates (transactions of 100), the memory driver failing 5% of publishes
# RETRIABLE at random. A failed event is retried in place after its backoff
# while other aggregates flow. In the broker log (line order = publication
# order): every aggregate's events first published in commit order, and no
# attempt of event N+1 (any outcome) before event N's first "ok".
ENG_TEST=walordering
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_ordering
write_wal_cfg "$WORK/relay.cfg" "max_attempts = 100;
    backoff = { initial_ms = 20; max_ms = 200; multiplier = 2.0; jitter = 0.2; };" \
    "retriable_rate = 0.05; delay_ms = 3; threaded = true;"
init_db "$WORK/relay.cfg"
enqueue_txns 10000 1000
drain "$WORK/relay.cfg" "$WORK/relay.log" 300
load_record
wal_expected
check_wal_published
check_wal_order
RETRIES=$(sql "SELECT count(*) FROM r WHERE status = 'retriable'")
[ "$RETRIES" -ge 100 ] || fail "only $RETRIES retriable failures: the test did not exercise retries"
expect_eq "attempts of event N+1 before event N's first ok" \
    "$(sql "SELECT count(*) FROM (SELECT n, lag(ok_line) OVER (PARTITION BY aggregate_id ORDER BY n) AS prev_ok
            FROM first_ok) f JOIN ev USING (n) JOIN r USING (event_id)
            WHERE f.prev_ok IS NOT NULL AND r.line < f.prev_ok")" 0
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
expect_eq "retries counted by the relay" "$(relay_stat "$WORK/relay.log" retried)" "$RETRIES"
check_logs_clean
echo "PASS wal ordering: 10000 events, 1000 aggregates, $RETRIES retriable failures," \
     "failing aggregates: $(sql "SELECT count(DISTINCT aggregate_id) FROM r WHERE status = 'retriable'")," \
     "duplicates: $(dup_count)"
