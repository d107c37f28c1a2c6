#!/bin/bash
# A 50 MB payload with max_payload_bytes = 1 MiB is dead-lettered with a
# clear last_error without ever being fetched (issue 11: the size is checked
# in SQL): the 100 events around it are published, and the relay's peak RSS
# (VmHWM, read while it still runs, after everything is settled) stays under
# 64 MB. The sanitizer build inflates RSS, so the same relay's peak without
# the big row is measured first and both figures are printed; the big row
# must also cost less than 16 MB over that baseline (a fetched payload would
# cost at least its 50 MB).
ENG_TEST=big_payload
. "$(dirname "$0")/engine_lib.sh"

MAX_KB=$((64 * 1024))
MAX_OVER_KB=$((16 * 1024))
SMALL="SELECT count(outbox_enqueue('Order', 'agg-' || (g % 10), 'order.created',
           jsonb_build_object('n', g, 'pad', repeat('x', 1000)))) FROM generate_series(1, 50) g"

# run_and_measure NAME: relays until 100 rows are published and nothing is
# pending, prints the relay's VmHWM in kB, stops it.
run_and_measure() {
    write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 10; max_payload_bytes = 1048576;" ""
    start_relay "$WORK/relay.cfg" "$WORK/$1.log"
    wait_sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) = 100
              AND count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL) = 0 FROM outbox" t 120
    local kb
    kb=$(peak_rss_kb "$RELAY_PID")
    stop_relay "$RELAY_PID" 30
    echo "$kb"
}

# baseline: the same rows without the big one
fresh_db eng_big_payload
write_cfg "$WORK/relay.cfg" "workers = 1;" ""
init_db "$WORK/relay.cfg"
sql "$SMALL" >/dev/null
sql "$SMALL" >/dev/null
BASE_KB=$(run_and_measure base)

fresh_db eng_big_payload
init_db "$WORK/relay.cfg"
sql "$SMALL" >/dev/null
# about 50 MB of hex digits: little for pglz to compress, so the stored size is large too
sql "SELECT outbox_enqueue('Order', 'agg-3', 'order.huge',
         jsonb_build_object('pad', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 1600000) g)))" >/dev/null
sql "$SMALL" >/dev/null
note "big row: $(sql "SELECT pg_size_pretty(octet_length(payload::text)::bigint) || ' as text, '
                      || pg_size_pretty(pg_column_size(payload)::bigint) || ' stored' FROM outbox WHERE event_type = 'order.huge'")"
rm -f "$REC"
BIG_KB=$(run_and_measure big)

load_record
expect_eq "big row: dead, never attempted by the driver" \
    "$(sql "SELECT (dead_at IS NOT NULL AND published_at IS NULL) || '/' || attempts FROM outbox WHERE event_type = 'order.huge'")" \
    "true/1"
LAST_ERROR=$(sql "SELECT last_error FROM outbox WHERE event_type = 'order.huge'")
note "big row last_error: $LAST_ERROR"
[[ $LAST_ERROR =~ ^payload\ of\ 5[0-9]{7}\ bytes\ exceeds\ max_payload_bytes\ \(1048576\)$ ]] ||
    fail "big row: unexpected last_error '$LAST_ERROR'"
expect_eq "broker log lines for the big row" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.event_type = 'order.huge'")" 0
expect_eq "small rows: published once each" \
    "$(sql "SELECT count(*) FROM outbox o WHERE event_type <> 'order.huge' AND published_at IS NOT NULL
            AND (SELECT count(*) FROM r WHERE r.event_id = o.event_id AND r.status = 'ok') = 1")" 100
note "peak RSS: $((BIG_KB / 1024)) MB with the big row, $((BASE_KB / 1024)) MB without it"
[ "$BIG_KB" -lt "$MAX_KB" ] || fail "peak RSS $BIG_KB kB with the big row: not under 64 MB"
[ $((BIG_KB - BASE_KB)) -lt "$MAX_OVER_KB" ] ||
    fail "the big row cost $(((BIG_KB - BASE_KB) / 1024)) MB of peak RSS over the baseline ($BASE_KB kB)"
check_logs_clean
echo "PASS big_payload"
