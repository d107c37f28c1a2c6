#!/bin/bash
# An unordered claim starts after the last row of its worker's previous full
# claim (core/claimer.c), so rows that wait before that place must be found by
# the claims that start from the first row: every 8th while a backlog lasts,
# and any after a claim that was not full.
# 1. Row 1 comes due 2 s after it is written; 6,000 rows behind it take at
#    least 6 s (one worker, batches of 50, each completed 100 ms after it is
#    published: at most two batches per 100 ms). Row 1 is published while the
#    backlog lasts, not after it.
# 2. A row whose transaction commits after rows with higher ids were
#    published (its id was drawn first) is published too.
ENG_TEST=claim_place
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_claim_place
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 50; ordering = \"none\"; poll_interval_ms = 100;" \
    "delay_ms = 100;"
init_db "$WORK/relay.cfg"
sql "CREATE TABLE go (k text)"
sql "SELECT outbox_enqueue('Order', 'due-later', 'order.created', '{}')" >/dev/null
sql "UPDATE outbox SET available_at = now() + interval '2 s'" >/dev/null
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 100), 'order.created', '{}'))
     FROM generate_series(1, 6000) g" >/dev/null

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL" 6001 120
after=$(sql "SELECT count(*) FROM outbox WHERE published_at > (SELECT published_at FROM outbox WHERE aggregate_id = 'due-later')")
[ "$after" -ge 50 ] || fail "the row that came due during the backlog was published after $after rows only (want >= 50: found while the backlog lasted)"
note "row due after 2 s: $after of 6,000 rows published after it"

# a late commit: its id is lower than rows the relay has published since
session obx_sess_late "BEGIN; SELECT outbox_enqueue('Order', 'late', 'order.created', '{}'); $(wait_go late) COMMIT;"
wait_in_go obx_sess_late
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 100), 'order.created', '{}'))
     FROM generate_series(1, 500) g" >/dev/null
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL" 6501 60
sql "INSERT INTO go VALUES ('late')" >/dev/null
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'late' AND published_at IS NOT NULL
            AND id < (SELECT max(id) FROM outbox)" 1 60
stop_relay "$RELAY" 30

load_record
expect_eq "events published (distinct ok lines)" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 6502
expect_eq "duplicates" "$(dup_count)" 0
echo "ok claim_place: a row due during a backlog and a late commit with a lower id are both published"
