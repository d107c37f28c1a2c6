#!/bin/bash
# WAL mode, an outage is not the events' fault: while the memory driver plays
# an unreachable broker ($WORK/down exists: refusals as OBX_UNAVAILABLE, probe
# unavailable), with max_attempts = 2 and a backoff of 10-20 ms, 300 events
# wait out an outage far longer than max_attempts x backoff: nothing is
# published, nothing dead-lettered, the slot is not confirmed past them. Then
# the file goes and the relay drains: every event published once with
# attempt 1, and the log says once that the output is down and once back.
# Meanwhile other writes make the slot hold more WAL than lag_warn_mb: the
# relay warns. During the outage the relay sleeps between probes (its CPU
# is printed; a busy loop fails the test).
ENG_TEST=waloutage
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_outage
WAL_OPTS="lag_warn_mb = 1;" write_wal_cfg "$WORK/relay.cfg" "max_attempts = 2;
    backoff = { initial_ms = 10; max_ms = 20; multiplier = 2.0; jitter = 0.0; };" \
    "unavailable_file = \"$WORK/down\";"
init_db "$WORK/relay.cfg"
touch "$WORK/down"
# the slot may legitimately confirm past WAL that holds no event (an empty
# transaction the server skips), never the end of the first events' commit
BEFORE_LSN=$(slot_confirmed)
enqueue_txns 100 30
FIRST_END=$(sql "SELECT pg_current_wal_lsn()")
enqueue_txns 200 30
note "slot created at $BEFORE_LSN, the first events end before $FIRST_END"

start_relay "$WORK/relay.cfg" "$WORK/relay.log" --drain
PID=$RELAY_PID
wait_log "$WORK/relay.log" "output mem unavailable" 60
# other writes go on: the slot, not confirmed past the waiting events, holds their WAL
sql "CREATE TABLE filler (x text); INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)"
wait_log "$WORK/relay.log" "replication slot $TEST_DB holds [0-9]+ MB of WAL \\(over relay.wal.lag_warn_mb = 1\\)" 30
# the outage goes on: probes, no attempts, and the stream sleeps (a loop
# that spun took a whole core; a sleeping one takes a few ticks)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
T0=$(cpu_ticks "$PID")
sleep 5
CPU=$(( ($(cpu_ticks "$PID") - T0) * 100 / ($(getconf CLK_TCK) * 5) ))
note "relay CPU during the outage: $CPU% of a core"
[ "$CPU" -lt 20 ] || fail "the relay took $CPU% of a core during the outage (it should sleep)"
expect_eq "ok lines during the outage" "$(ok_events)" 0
expect_eq "dead letters during the outage" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
note "confirmed during the outage: $(slot_confirmed)"
expect_eq "slot confirmed past the first events during the outage" "$(sql "SELECT confirmed_flush_lsn < '$FIRST_END'::pg_lsn FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" t
kill -0 "$PID" 2>/dev/null || fail "the relay exited during the outage"
rm -f "$WORK/down"
wait_exit "$PID" 120
expect_eq "relay exit code" "$EXIT_RC" 0
load_record
wal_expected
check_wal_published
check_wal_order
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
expect_eq "ok lines with an attempt other than 1" "$(sql "SELECT count(*) FROM r WHERE status = 'ok' AND attempt <> 1")" 0
expect_eq "duplicates" "$(dup_count)" 0
expect_eq "'unavailable' lines in the log" "$(grep -c "output mem unavailable" "$WORK/relay.log")" 1
check_logs_clean
echo "PASS wal outage: 300 events waited, deferred $(relay_stat "$WORK/relay.log" deferred) times, none dead, all published with attempt 1"
