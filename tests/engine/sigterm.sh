#!/bin/bash
# Graceful shutdown.
# 1. SIGTERM during large batches (batch 1000, the driver completes after
#    2 s, shutdown_timeout 10 s): exit 0, the in-flight
#    batches are completed AND recorded (every "ok" line's row is marked), no
#    lease left held, `status` shows 0 in flight; a following drain publishes
#    the rest with no duplicate.
# 2. The deadline passes first (driver needs 30 s, shutdown_timeout 1 s): exit
#    0, leases released without counting an attempt, nothing published (so
#    the relay did not wait for the driver); a drain publishes everything.
# Exit times are printed, not asserted: the machine may be slow.
# 3. A second signal exits at once (130); the leases expire and a drain
#    publishes everything.
ENG_TEST=sigterm
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_sigterm
write_cfg "$WORK/slow.cfg" "workers = 2; batch_size = 1000; shutdown_timeout_ms = 10000;" "delay_ms = 2000;"
write_cfg "$WORK/stuck.cfg" "workers = 2; batch_size = 1000; shutdown_timeout_ms = 1000;
    max_transaction_ms = 60000;" "delay_ms = 30000;"
write_cfg "$WORK/twice.cfg" "workers = 2; batch_size = 1000; lease_seconds = 2; shutdown_timeout_ms = 20000;
    max_transaction_ms = 60000;" \
    "delay_ms = 30000;"
write_cfg "$WORK/fast.cfg" "workers = 2; batch_size = 1000;" ""
init_db "$WORK/fast.cfg"
enqueue_bulk 4000 4000
sql "ANALYZE outbox"

in_flight() { "$OBX_BIN" status -c "$WORK/fast.cfg" --json | sed -n 's/.*"in_flight":\([0-9]*\).*/\1/p'; }

# --- 1
start_relay "$WORK/slow.cfg" "$WORK/slow.log"
wait_sql "SELECT ($HELD_SQL) >= 1000" t 60
T0=$(date +%s%N)
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 30
MS=$((($(date +%s%N) - T0) / 1000000))
expect_eq "exit code after SIGTERM" "$EXIT_RC" 0
expect_eq "leases held after SIGTERM" "$(sql "$HELD_SQL")" 0
expect_eq "status in flight" "$(in_flight)" 0
load_record
OKS=$(sql "SELECT count(*) FROM r WHERE status = 'ok'")
[ "$OKS" -ge 1000 ] || fail "only $OKS ok lines: the batch in flight was not completed"
expect_eq "ok lines whose row is not marked published" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE r.status = 'ok' AND o.published_at IS NULL")" 0
note "1: exit after $MS ms, $OKS published before the exit"

# --- 2
start_relay "$WORK/stuck.cfg" "$WORK/stuck.log"
wait_sql "SELECT ($HELD_SQL) >= 1000" t 60
BEFORE=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
T0=$(date +%s%N)
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 30
MS=$((($(date +%s%N) - T0) / 1000000))
expect_eq "exit code after SIGTERM past the deadline" "$EXIT_RC" 0
expect_eq "leases held after the deadline" "$(sql "$HELD_SQL")" 0
expect_eq "published by the stuck relay" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$BEFORE"
expect_eq "attempts counted for released rows" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND attempts > 0")" 0
grep -q "still in flight are released" "$WORK/stuck.log" || fail "no release logged at the deadline"
note "2: exit after $MS ms"

# --- 3
start_relay "$WORK/twice.cfg" "$WORK/twice.log"
wait_sql "SELECT ($HELD_SQL) >= 1000" t 60
kill -TERM "$RELAY_PID"
sleep 0.3
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 10
expect_eq "exit code after a second signal" "$EXIT_RC" 130

drain "$WORK/fast.cfg" "$WORK/drain.log" 120
load_record
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
expect_eq "status in flight at the end" "$(in_flight)" 0
check_logs_clean
echo "PASS sigterm"
