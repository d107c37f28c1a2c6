#!/bin/bash
# WAL mode, one process per slot: relay A streams; relay B, started on the
# same slot, waits as a hot standby (it publishes nothing while A lives). A
# is killed (SIGKILL) mid-stream; B takes over and relays everything A had
# not confirmed: every committed event has an "ok" line, in commit order per
# aggregate; duplicates are counted.
ENG_TEST=walstandby
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_standby
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 20; threaded = true;"
init_db "$WORK/relay.cfg"

start_relay "$WORK/relay.cfg" "$WORK/a.log"
PID_A=$RELAY_PID
wait_log "$WORK/a.log" "$STREAMING_LINE" 30
start_relay "$WORK/relay.cfg" "$WORK/b.log"
PID_B=$RELAY_PID
wait_log "$WORK/b.log" "$STANDBY_LINE" 30
enqueue_txns 10000 20 # one event of each of 20 aggregates in flight: A is mid-stream when killed
for ((i = 0; i < 300; i++)); do
    [ "$(ok_events)" -ge 2000 ] && break
    sleep 0.1
done
# checked before the kill: once A is gone, B may take over at its next retry
grep -q '"pid":'"$PID_B" "$REC" && fail "the standby published while the active relay lived"
kill -9 "$PID_A"
wait "$PID_A" 2>/dev/null || true
A_OK=$(ok_events)
[ "$A_OK" -lt 10000 ] || fail "A had published everything before the kill"
enqueue_txns 5000 300 100 order.after_takeover
wait_log "$WORK/b.log" "took over as the active relay" 60
for ((i = 0; i < 900; i++)); do
    [ "$(ok_events)" -ge 15000 ] && break
    sleep 0.2
done
stop_relay "$PID_B" 30
load_record
wal_expected
expect_eq "committed events" "$(sql "SELECT count(*) FROM ev")" 15000
check_wal_published
check_wal_order
check_logs_clean
echo "PASS wal standby: $A_OK events from A before SIGKILL, B took over;" \
     "B published $(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok' AND pid = $PID_B"), duplicates: $(dup_count)"
