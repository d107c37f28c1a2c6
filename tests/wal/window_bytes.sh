#!/bin/bash
# WAL mode, the window is bounded in bytes as well as in events: 200 events
# of 512 KB with a slow broker (the memory driver holds each 200 ms) and
# relay.wal.max_in_flight_mb = 16. The window's peak (a gauge at /metrics)
# stays within the bound plus one row, however many events the slot holds;
# every event is published in order. The relay's peak RSS is printed.
ENG_TEST=walwindowbytes
. "$(dirname "$0")/wal_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}

fresh_wal_db wal_window_bytes
PORT=$("$MC" freeport)
WAL_OPTS="max_in_flight_mb = 16;" write_wal_cfg "$WORK/relay.cfg" "" \
    "delay_ms = 200; threaded = true;" "metrics = { listen = \"127.0.0.1:$PORT\"; };"
init_db "$WORK/relay.cfg"
. "$(dirname "$0")/../metrics/scrape.sh"
for ((k = 0; k < 20; k++)); do
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.big',
           jsonb_build_object('n', g, 'pad', repeat('x', 512 * 1024)))) FROM generate_series($((k * 10 + 1)), $((k * 10 + 10))) g" >/dev/null
done
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_log "$WORK/relay.log" "streaming from replication slot" 60
scrape_until "SELECT coalesce(confirmed_flush_lsn >= '$END_LSN', false) FROM pg_replication_slots
              WHERE slot_name = '$TEST_DB'" t "the slot was not confirmed past the last commit"
scrape "$WORK/after.txt"
RSS_KB=$(peak_rss_kb "$RELAY")
stop_relay "$RELAY" 30
PEAK=$(value "$WORK/after.txt" outbox_relay_wal_window_peak_bytes)
note "window peak $PEAK bytes (bound 16 MiB), relay peak RSS $((RSS_KB / 1024)) MB"
awk -v p="$PEAK" 'BEGIN { exit !(p > 0 && p <= (16 + 1) * 1048576) }' ||
    fail "the window held $PEAK bytes, over relay.wal.max_in_flight_mb = 16 plus one row"
load_record
wal_expected
check_wal_published
check_wal_order
drop_wal_slots
echo "PASS wal window bytes: peak $PEAK bytes under a 16 MiB bound, 200 events of 512 KB published"
