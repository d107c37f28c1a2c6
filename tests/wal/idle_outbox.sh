#!/bin/bash
# WAL mode, a quiet outbox in a busy database: while no event is written,
# another table writes 500 MB of WAL. The relay confirms the stream's
# keepalive position when nothing is in flight, so the slot's lag ends under
# 16 MB (no heartbeat table needed); an event written afterwards is still
# published.
ENG_TEST=walidle
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_idle_outbox
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/relay.log" "streaming from replication slot" 30
START=$(sql "SELECT pg_current_wal_lsn()")
sql "CREATE TABLE bystander (x text)"
for ((k = 0; k < 11; k++)); do
    sql "INSERT INTO bystander SELECT repeat('x', 1000) FROM generate_series(1, 48000)" >/dev/null
done
WROTE=$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$START') / 1048576")
[ "${WROTE%.*}" -ge 500 ] || fail "the bystander wrote only $WROTE MB of WAL"
lag() { sql "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) / 1048576 FROM pg_replication_slots WHERE slot_name = '$TEST_DB'"; }
for ((i = 0; i < 300; i++)); do
    L=$(lag)
    [ "${L%.*}" -lt 16 ] && break
    sleep 0.2
done
note "the bystander wrote ${WROTE%.*} MB of WAL; the slot's lag came down to ${L%.*} MB"
[ "${L%.*}" -lt 16 ] || fail "the slot holds ${L%.*} MB of WAL with nothing in the outbox"
enqueue_txns 100 10
for ((i = 0; i < 300 && $(ok_events) < 100; i++)); do sleep 0.1; done
expect_eq "events published after the quiet spell" "$(ok_events)" 100
stop_relay "$PID" 30
check_logs_clean
drop_wal_slots
echo "PASS wal idle outbox: ${WROTE%.*} MB written elsewhere, the slot's lag came down to ${L%.*} MB"
