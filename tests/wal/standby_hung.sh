#!/bin/bash
# WAL mode, a hung active relay: relay A streams, relay B waits as a
# standby. A is SIGSTOPped mid-stream (a wedged host: its connection stays
# open, nothing answers). The walsender gives up on A after the relay's
# wal_sender_timeout (3 x status_interval_ms, at least 10 s; the server's
# default is a minute) and B takes over: it must within 30 s, and the time
# is printed. A, resumed, finds its stream gone and waits as a standby.
# Every committed event is published, in commit order per aggregate;
# duplicates are counted.
ENG_TEST=walstandbyhung
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_standby_hung
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 20; threaded = true;"
init_db "$WORK/relay.cfg"

start_relay "$WORK/relay.cfg" "$WORK/a.log"
PID_A=$RELAY_PID
wait_log "$WORK/a.log" "streaming from replication slot" 30
start_relay "$WORK/relay.cfg" "$WORK/b.log"
PID_B=$RELAY_PID
wait_log "$WORK/b.log" "standby: replication slot $TEST_DB is held by another relay" 30
enqueue_txns 4000 20
for ((i = 0; i < 300; i++)); do
    [ "$(ok_events)" -ge 500 ] && break
    sleep 0.1
done
kill -STOP "$PID_A"
STOPPED=$(date +%s%N)
for ((i = 0; i < 300; i++)); do
    grep -q "took over as the active relay" "$WORK/b.log" && break
    sleep 0.1
done
grep -q "took over as the active relay" "$WORK/b.log" || { kill -CONT "$PID_A"; fail "no takeover within 30 s of the active relay hanging"; }
TOOK_MS=$((($(date +%s%N) - STOPPED) / 1000000))
note "the standby took over $TOOK_MS ms after the active relay hung"
kill -CONT "$PID_A"
wait_log "$WORK/a.log" "standby: replication slot $TEST_DB is held by another relay" 60
enqueue_txns 1000 300 100 order.after_takeover
for ((i = 0; i < 900; i++)); do
    [ "$(ok_events)" -ge 5000 ] && break
    sleep 0.2
done
stop_relay "$PID_B" 30
stop_relay "$PID_A" 30
load_record
wal_expected
expect_eq "committed events" "$(sql "SELECT count(*) FROM ev")" 5000
check_wal_published
check_wal_order
check_logs_clean
drop_wal_slots
echo "PASS wal standby, hung active relay: taken over after $TOOK_MS ms, $(dup_count) duplicates"
