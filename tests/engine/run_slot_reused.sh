#!/bin/bash
# An ordered claim locks an aggregate's head, not the run behind it (issue
# 13: a row lock per event cost the claim a fifth of its time); the batch is
# marked where the claim read its rows, by ctid. Here a run's row is
# recorded by another session while the batch is in flight, and its place on
# the page is freed by VACUUM and taken by another row's new version: the
# ctid the relay read now names that other row. The mark must not record it.
# 1. A session takes a transaction id first (older than the relay's, so
#    VACUUM may free what it deletes while the relay's batch is in flight).
# 2. Aggregate A has three events (a head and a run of two); row X (another
#    aggregate) is not due, so it is not claimed. One worker, retention
#    delete, lease 3 s (renewed every second), the memory driver completing
#    after 10 s (step 3 must be done by then; a stuck driver is one silent
#    for 5 leases).
# 3. While A's batch waits: the session deletes A's second event and
#    commits; once the relay has renewed its lease, VACUUM frees its slot;
#    X is updated in place (same page), its new version taking that slot.
# 4. After the acknowledgements: X is still there (a mark by ctid alone
#    deleted it: an event lost), A's events are published and recorded (the
#    batch's transaction rolled back past its lease: they go again, as
#    duplicates), and the relay says why it recorded row by row.
ENG_TEST=run_slot_reused
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_run_slot_reused
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 50; retention = \"delete\";
    ordering = \"aggregate\"; lease_seconds = 3; max_transaction_ms = 60000;" "delay_ms = 10000;"
init_db "$WORK/relay.cfg"
sql "CREATE TABLE go (k text)"

# 1
session obx_sess_old "BEGIN; SELECT txid_current(); $(wait_go delete)
    DELETE FROM outbox WHERE aggregate_id = 'A' AND event_type = 'a.2'; COMMIT;"
OLD=$SESSION_PID
wait_in_go obx_sess_old

# 2
for e in a.1 a.2 a.3; do sql "SELECT outbox_enqueue('Order', 'A', '$e', '{}')" >/dev/null; done
sql "SELECT outbox_enqueue('Order', 'X', 'x.1', '{}')" >/dev/null
sql "UPDATE outbox SET available_at = 'infinity' WHERE aggregate_id = 'X'"
X_ID=$(sql "SELECT id FROM outbox WHERE aggregate_id = 'X'")
expect_eq "rows on one page" "$(sql "SELECT count(DISTINCT (ctid::text::point)[0]) FROM outbox")" 1
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_sql "SELECT count(*) FROM pgrowlocks('outbox')" 1 30
wait_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB'
          AND application_name = 'outbox-relay' AND state = 'idle in transaction'" 1 30

# 3
SLOT=$(sql "SELECT ctid FROM outbox WHERE aggregate_id = 'A' AND event_type = 'a.2'")
sql "INSERT INTO go VALUES ('delete')"
wait_exit "$OLD" 30
# the relay's session keeps the snapshot of its last statement: after its
# next renew, nothing it holds keeps VACUUM from the deleted row
OLD_XID=$(head -1 "$WORK/obx_sess_old.out")
wait_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB'
          AND application_name = 'outbox-relay' AND state = 'idle in transaction'
          AND coalesce(backend_xmin::text::bigint > $OLD_XID, true)" 1 30
sql "VACUUM (INDEX_CLEANUP ON) outbox"
sql "UPDATE outbox SET last_error = 'moved' WHERE id = $X_ID"
expect_eq "X's new version in the freed slot" \
    "$(sql "SELECT ctid FROM outbox WHERE id = $X_ID")" "$SLOT"

# 4
wait_sql "SELECT count(*) FROM outbox WHERE aggregate_id = 'A'" 0 60
stop_relay "$RELAY_PID" 30
expect_eq "row X (not claimed, its new version where A's second event was)" \
    "$(sql "SELECT count(*) FROM outbox WHERE id = $X_ID AND published_at IS NULL")" 1
grep -q "recorded row by row" "$WORK/relay.log" || fail "no word of the batch recorded row by row"
load_record
expect_eq "A's events with an ok line" \
    "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok' AND aggregate_id = 'A'")" 3
expect_eq "ok lines for X" "$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'X'")" 0
check_logs_clean
echo "PASS run_slot_reused"
