#!/bin/bash
# Bug reproduction: a claim that takes longer than the lease writes a lease
# that has already expired.
# The claim sets lease_until = now() + lease, and now() is the claim
# transaction's START. Whatever delays the claim statement (waiting for a
# lock, or, naturally, the nested-loop anti-join plan it gets on a freshly
# loaded outbox before autovacuum has analyzed it: seconds for 20,000 rows)
# is taken from the lease; past the lease, the rows are claimable by any
# other worker the moment the claim commits, and get published twice
# without any crash (seen: 200 duplicates in a clean 2-worker drain of
# 20,000 fresh rows with lease_seconds = 2).
# Deterministic here: the relay (lease 1 s, polling only every 60 s) is up
# and idle; the rows become due; a session holds SHARE on the table for 3 s
# and a NOTIFY wakes the relay, whose claims wait for the lock. A trigger
# logs, for every claim write, the lease written and the clock at that
# moment: every lease must lie in the future when it is written.
ENG_TEST=leaseclaim
. "$(dirname "$0")/elib.sh"

fresh_db eng_leaseclaim
write_cfg "$WORK/relay.cfg" "" ""
init_db "$WORK/relay.cfg"
enqueue_bulk 1000 100
sql "ANALYZE outbox"
sql "CREATE TABLE claim_log (id bigint, owner text, lease_until timestamptz, written timestamptz);
     CREATE FUNCTION log_claim() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN INSERT INTO claim_log VALUES (NEW.id, NEW.lease_owner, NEW.lease_until, clock_timestamp());
           RETURN NEW; END \$\$;
     CREATE TRIGGER log_claim BEFORE UPDATE ON outbox FOR EACH ROW
       WHEN (NEW.lease_owner IS NOT NULL AND NEW.lease_owner IS DISTINCT FROM OLD.lease_owner)
       EXECUTE FUNCTION log_claim();"

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
sql "SELECT owner, min(lease_until - written), max(lease_until - written), min(written) FROM claim_log GROUP BY owner ORDER BY 4 LIMIT 4" >&2
check_all_published
CLAIMS=$(sql "SELECT count(*) FROM claim_log")
EXPIRED=$(sql "SELECT count(*) FROM claim_log WHERE lease_until <= written")
echo "lease_slow_claim: $CLAIMS claim writes, $EXPIRED wrote an already expired lease," \
     "duplicates: $(dup_count)"
[ "$CLAIMS" -gt 0 ] || fail "no claim was logged"
expect_eq "claims that wrote an already expired lease" "$EXPIRED" 0
echo "PASS lease_slow_claim"
