#!/bin/bash
# A role that can only log in takes the relay's advisory lock keys and keeps
# its session (issue 54): it is named, and delivery resumes once it goes.
# 1. It holds the partitions' key of a partitioned outbox: init-db exits
#    non-zero naming its pid and role instead of succeeding with no
#    partition made; once it is gone, init-db makes them.
# 2. It holds the cursor reader's key, the partitions' key and the
#    dead-letter forwarder's: the relay in cursor mode answers /readyz 503
#    naming it for each, with outbox_relay_lock_squatted 1 for each and a
#    warning in the log, and delivers nothing; once its session ends, every
#    event arrives and the cursor's and forwarder's reasons go (the
#    partitions' stays until the next upkeep pass, a minute on).
# 3. It holds (shared) the lock of another cursor layout (shards = 2), as a
#    reader of that layout would: it is named for the cursor lock, and the
#    reader starts once it goes.
WAL_AS=cursor
ENG_TEST=cursorsquat
. "$(dirname "$0")/../wal/wal_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}

fresh_db cursor_lock_squat
SQUATTER=${TEST_DB}_squatter # roles are the cluster's
drop_role() { psql -qAt -d postgres -c "DROP ROLE IF EXISTS $SQUATTER" >/dev/null; }
eng_extra_cleanup() {
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null 2>&1 || true
    drop_role 2>/dev/null || true
}
drop_role
psql -qAt -d postgres -c "CREATE ROLE $SQUATTER LOGIN" >/dev/null

PORT=$("$MC" freeport)
write_wal_cfg "$WORK/relay.cfg" 'partitions = { interval = "1 day"; ahead = 2; };' "delay_ms = 1;" \
    "metrics = { listen = \"127.0.0.1:$PORT\"; };
dead_letter = { output = \"mem\"; destination = \"dead\"; };"
. "$(dirname "$0")/../metrics/scrape.sh"

CURSOR_KEY="hashtext('outbox-relay cursor'), hashtext('public.outbox')"
PARTS_KEY="hashtext('outbox-relay partitions'), hashtext('public.outbox')"
FORWARD_KEY="hashtext('public.outbox dead_letter')"
# squat KEY...: a session of the LOGIN-only role takes each key and sleeps;
# sets SQUAT_PID (its backend)
squat() {
    local k args=()
    for k in "$@"; do args+=(-c "SELECT pg_advisory_lock($k)"); done
    psql -qAt -U "$SQUATTER" -d "$TEST_DB" "${args[@]}" -c "SELECT pg_sleep(600)" \
        >"$WORK/squat.out" 2>&1 &
    ENG_PIDS+=($!)
    wait_sql "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
              WHERE l.locktype = 'advisory' AND l.granted AND a.usename = '$SQUATTER'" "$#" 30
    SQUAT_PID=$(sql "SELECT pid FROM pg_stat_activity WHERE usename = '$SQUATTER'")
}
unsquat() {
    sql "SELECT pg_terminate_backend($SQUAT_PID)" >/dev/null
    wait_sql "SELECT count(*) FROM pg_stat_activity WHERE usename = '$SQUATTER'" 0 30
}
holder() { echo "pid $SQUAT_PID (role $SQUATTER"; } # as the relay names it

# --- 1
squat "$PARTS_KEY"
if "$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init.out" 2>&1; then
    fail "init-db succeeded while another role held the partitions' lock: $(cat "$WORK/init.out")"
fi
grep -qF "$(holder)" "$WORK/init.out" || fail "init-db does not name the holder: $(cat "$WORK/init.out")"
unsquat
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db failed once the lock was free"
expect_eq "partitions made" "$(sql "SELECT count(*) > 0 FROM outbox_partition_bounds('outbox')")" t

# --- 2
squat "$CURSOR_KEY" "$PARTS_KEY" "$FORWARD_KEY"
NAMED=$(holder)
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 3), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 10) g" >/dev/null
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
for ((i = 0; i < 300; i++)); do # a liveness bound: the relay names it within seconds
    get /readyz >"$WORK/ready.txt" 2>/dev/null || true
    named=0
    for lock in cursor partitions dead_forward; do
        grep -qF "$lock lock: held by $NAMED" "$WORK/ready.txt" && named=$((named + 1))
    done
    [ "$named" = 3 ] && break
    sleep 0.2
done
expect_eq "/readyz status with the locks squatted" "$(head -1 "$WORK/ready.txt")" 503
[ "$named" = 3 ] || fail "/readyz does not name the squatter ($NAMED) for each lock: $(cat "$WORK/ready.txt")"
scrape "$WORK/m1.txt"
expect_eq "cursor lock squatted" "$(value "$WORK/m1.txt" 'outbox_relay_lock_squatted{lock="cursor"}')" 1
expect_eq "partitions lock squatted" "$(value "$WORK/m1.txt" 'outbox_relay_lock_squatted{lock="partitions"}')" 1
expect_eq "dead_forward lock squatted" "$(value "$WORK/m1.txt" 'outbox_relay_lock_squatted{lock="dead_forward"}')" 1
grep -qF "is held by $NAMED" "$WORK/relay.log" || fail "the log does not name the squatter"
expect_eq "events delivered while the reader's lock is squatted" "$(ok_events)" 0

unsquat
for ((i = 0; i < 300 && $(ok_events) < 10; i++)); do sleep 0.1; done
expect_eq "events delivered once the squatter is gone" "$(ok_events)" 10
grep -q "reading public.outbox from cursor" "$WORK/relay.log" || fail "the relay never read"
for ((i = 0; i < 300; i++)); do # the forwarder tries again every 5 s
    get /readyz >"$WORK/ready.txt"
    grep -qE "(cursor|dead_forward) lock" "$WORK/ready.txt" || break
    sleep 0.2
done
grep -qE "(cursor|dead_forward) lock" "$WORK/ready.txt" &&
    fail "/readyz still names the squatter: $(cat "$WORK/ready.txt")"
scrape "$WORK/m2.txt"
expect_eq "cursor lock squatted after" "$(value "$WORK/m2.txt" 'outbox_relay_lock_squatted{lock="cursor"}')" 0
expect_eq "dead_forward lock squatted after" "$(value "$WORK/m2.txt" 'outbox_relay_lock_squatted{lock="dead_forward"}')" 0
stop_relay "$RELAY_PID" 30

# --- 3
squat "hashtext('outbox-relay cursor layout'), hashtext('public.outbox/2')"
NAMED=$(holder)
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 3), 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(11, 15) g" >/dev/null
start_relay "$WORK/relay.cfg" "$WORK/relay3.log"
for ((i = 0; i < 300; i++)); do
    get /readyz >"$WORK/ready.txt" 2>/dev/null || true
    grep -qF "cursor lock: held by $NAMED" "$WORK/ready.txt" && break
    sleep 0.2
done
grep -qF "cursor lock: held by $NAMED" "$WORK/ready.txt" ||
    fail "/readyz does not name the squatter of another layout's key ($NAMED): $(cat "$WORK/ready.txt")"
expect_eq "events delivered while a layout's lock is squatted" "$(ok_events)" 10
unsquat
for ((i = 0; i < 300 && $(ok_events) < 15; i++)); do sleep 0.1; done
expect_eq "events delivered once the layout's squatter is gone" "$(ok_events)" 15
stop_relay "$RELAY_PID" 30
echo "PASS: cursor_lock_squat"
