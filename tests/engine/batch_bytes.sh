#!/bin/bash
# Poll mode is bounded in bytes (issue 54, relay.max_batch_mb): 400 rows of
# about 1 MB each drain with the default settings (batch_size 500, one
# worker) with a peak RSS under 300 MB; before the bound, one claim took
# all 400 (the 2,000-row drain peaked at 974 MB). Every row is published
# once. The sanitizer's quarantine of freed memory is kept small here, so
# that what is measured is what the relay holds.
ENG_TEST=batch_bytes
. "$(dirname "$0")/engine_lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=16"
MAX_KB=$((300 * 1024))

fresh_db eng_batch_bytes
write_cfg "$WORK/relay.cfg" "" ""
init_db "$WORK/relay.cfg"
# about 990 kB of hex digits a row (under max_payload_bytes' 1 MiB), little
# for pglz to compress, over 100 aggregates
sql "WITH s AS (SELECT string_agg(md5(g::text), '') AS pad FROM generate_series(1, 30900) g)
     SELECT count(outbox_enqueue('Order', 'a' || (g % 100), 'order.created', jsonb_build_object('n', g, 'pad', s.pad)))
     FROM s, generate_series(1, 400) g" >/dev/null
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_sql "SELECT count(*) FILTER (WHERE published_at IS NULL) FROM outbox" 0 300
KB=$(peak_rss_kb "$RELAY_PID")
stop_relay "$RELAY_PID" 60
load_record
expect_eq "events published once" "$(sql "SELECT count(*) FROM (SELECT event_id FROM r WHERE status = 'ok'
                                          GROUP BY event_id HAVING count(*) = 1) o")" 400
check_order
note "peak RSS: $((KB / 1024)) MB for 400 rows of 1 MB (max_batch_mb 32, batch_size 500)"
[ "$KB" -lt "$MAX_KB" ] || fail "peak RSS $((KB / 1024)) MB: not under 300 MB"
check_logs_clean
echo "PASS batch_bytes: 400 x 1 MB drained at a peak of $((KB / 1024)) MB"
