#!/bin/bash
# Bug reproduction: a claim that takes longer than the lease must not let
# its rows be published twice.
# Seen when a claim wrote lease_until = now() + lease, now() being the claim
# transaction's start: whatever delayed the statement (waiting for a lock, or
# the nested-loop plan it gets on a freshly loaded outbox before autovacuum
# has analyzed it: seconds for 20,000 rows) was taken from the lease, and the
# rows were claimable by any other worker the moment the claim committed (200
# duplicates in a clean 2-worker drain of 20,000 fresh rows, lease 2 s). The
# lease is the claim's transaction now, which no timer ends while its
# statement runs; this keeps the case.
# Deterministic here: the relay (lease 1 s, polling only every 60 s) is up
# and idle; the rows become due; a session holds SHARE on the table for 3 s
# and a NOTIFY wakes the relay, whose claims wait for the lock. Every event
# must be published exactly once.
ENG_TEST=leaseclaim
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_leaseclaim
write_cfg "$WORK/relay.cfg" "" ""
init_db "$WORK/relay.cfg"
enqueue_bulk 1000 100
sql "ANALYZE outbox"
sql "UPDATE outbox SET available_at = 'infinity'"
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 100; lease_seconds = 1; poll_interval_ms = 60000;" \
    "delay_ms = 500;"
start_relay "$WORK/relay.cfg" "$WORK/relay.log" --drain
DRAINER=$RELAY_PID
# both workers connected, found nothing to do and wait for a NOTIFY
wait_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB'
          AND application_name = 'outbox-relay' AND state = 'idle' AND query LIKE 'SELECT EXISTS%'" 2 60
sql "UPDATE outbox SET available_at = now()"
psql -qAt -d "$TEST_DB" -c "BEGIN; LOCK TABLE outbox IN SHARE MODE; SELECT pg_sleep(3); COMMIT;" \
    >/dev/null 2>"$WORK/locker.log" &
LOCKER=$!
ENG_PIDS+=("$LOCKER")
wait_sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE c.relname = 'outbox' AND l.mode = 'ShareLock' AND l.granted" 1 30
sql "SELECT pg_notify('public.outbox', '')"
wait_exit "$DRAINER" 120
[ "$EXIT_RC" -eq 0 ] || fail "run --drain exited $EXIT_RC"
wait "$LOCKER" || fail "the locking session failed"
load_record
check_all_published
DUPS=$(dup_count)
echo "lease_slow_claim: claims waited for the lock 3 s (lease 1 s), duplicates: $DUPS"
expect_eq "events published more than once after a claim slower than the lease" "$DUPS" 0
echo "PASS lease_slow_claim"
