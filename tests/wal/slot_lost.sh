#!/bin/bash
# WAL mode, slot safety: `status` shows the slot's lag while no relay reads
# it; with max_slot_wal_keep_size exceeded the server invalidates the slot,
# `status` says so, and `run` says what happened and how to recover and exits
# 1; `init-db --reset-slot` re-creates the slot (saying events committed
# meanwhile are not relayed) and events committed after it are relayed.
# Uses a PRIVATE PostgreSQL like pg_restart (WAL_PGF_PORT, default from free_ports):
# max_slot_wal_keep_size is a server setting.
ENG_TEST=walslot
. "$(dirname "$0")/wal_lib.sh"

PGF_PORT=${WAL_PGF_PORT:-$(free_ports 1)}
PGF_DIR=/tmp/obx-walpgf-$PGF_PORT
pgf() { SVC_DIR=$PGF_DIR PG_PORT=$PGF_PORT bash "$SERVICES" "$@"; }
eng_extra_cleanup() {
    [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true
    psql -qAt -d postgres -c "ALTER SYSTEM RESET max_slot_wal_keep_size" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
    pgf pg-stop >/dev/null 2>&1 || true
}
pgf pg-stop
pgf pg-start
export PGHOST=127.0.0.1 PGPORT=$PGF_PORT PGUSER=postgres PGDATABASE=postgres
psql -qAt -d postgres -c "ALTER SYSTEM SET max_slot_wal_keep_size = '16MB'" -c "SELECT pg_reload_conf()" >/dev/null

fresh_wal_db wal_slot
WAL_OPTS="lag_warn_mb = 1;" write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
enqueue_txns 200 10
drain "$WORK/relay.cfg" "$WORK/first.log" 60
expect_eq "events relayed before the slot is lost" "$(ok_events)" 200

# no relay reads the slot: WAL piles up behind it
sql "CREATE TABLE filler (x text)"
sql "INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)"
LAG=$("$OBX_BIN" status --json -c "$WORK/relay.cfg" | sed -n 's/.*"slot_lag_bytes":\([0-9]*\).*/\1/p')
[ "${LAG:-0}" -gt 1000000 ] || fail "status shows a slot lag of '$LAG' bytes after 3 MB of WAL"
for i in 1 2 3 4 5 6; do
    sql "INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 5000)"
    sql "SELECT pg_switch_wal()" >/dev/null
done
sql "CHECKPOINT"
wait_sql "SELECT wal_status FROM pg_replication_slots WHERE slot_name = '$TEST_DB'" lost 60
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.out" || fail "status failed"
grep -q "the slot was invalidated: run \`outbox-relay init-db --reset-slot" "$WORK/status.out" ||
    fail "status does not say the slot is lost: $(cat "$WORK/status.out")"
rc=0
timeout 60 "$OBX_BIN" run -c "$WORK/relay.cfg" >"$WORK/lost.log" 2>&1 || rc=$?
expect_eq "run on an invalidated slot" "$rc" 1
grep -q "replication slot \"$TEST_DB\" was invalidated" "$WORK/lost.log" || fail "run: $(cat "$WORK/lost.log")"
grep -q -- "--reset-slot" "$WORK/lost.log" || fail "run does not say how to recover: $(cat "$WORK/lost.log")"

"$OBX_BIN" init-db --reset-slot -c "$WORK/relay.cfg" >"$WORK/reset.out" 2>&1 || fail "reset: $(cat "$WORK/reset.out")"
grep -q "replication slot $TEST_DB dropped: events committed since" "$WORK/reset.out" || fail "reset: $(cat "$WORK/reset.out")"
grep -q "replication slot $TEST_DB created" "$WORK/reset.out" || fail "reset: $(cat "$WORK/reset.out")"
enqueue_txns 100 10 100 order.after_reset
drain "$WORK/relay.cfg" "$WORK/after.log" 60
expect_eq "events relayed after the reset" "$(ok_events)" 300
check_logs_clean
echo "PASS wal slot_lost: lag $LAG bytes shown, invalidated slot refused with exit 1, reset and relayed again"
