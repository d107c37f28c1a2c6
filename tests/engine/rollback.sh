#!/bin/bash
# Rolled-back transactions never produce a message, under concurrent load:
# four psql sessions each run 150 transactions of 5 events while the relay
# publishes; half the transactions ROLLBACK, and every fifth one commits 2
# events but rolls back 3 to a SAVEPOINT. Event ids are chosen by the test
# (md5 of session/tx/k), so the rolled-back ids are known. The broker log
# must hold exactly the committed ids, and no line at all for a rolled-back id.
ENG_TEST=rollback
. "$(dirname "$0")/engine_lib.sh"

SESSIONS=4 TXS=150
fresh_db eng_rollback
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 100; lease_seconds = 30;" "delay_ms = 5;"
init_db "$WORK/relay.cfg"

# the test's rule for what commits, used by the generator and by the checks
sql "CREATE TABLE expected AS
     SELECT md5('rb-' || s || '-' || tx || '-' || k)::uuid AS event_id, s, tx, k,
            CASE WHEN tx % 5 = 0 THEN k <= 2 ELSE (s + tx) % 2 = 0 END AS committed
     FROM generate_series(1, $SESSIONS) s, generate_series(1, $TXS) tx, generate_series(1, 5) k"

gen_session() { # gen_session S: the SQL script of session S
    local s=$1 tx
    for ((tx = 1; tx <= TXS; tx++)); do
        local ins="INSERT INTO outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
          SELECT md5('rb-$s-$tx-' || k)::uuid, 'Order', 'agg-' || (($s * $TXS + $tx + k) % 50),
                 'order.created', jsonb_build_object('s', $s, 'tx', $tx, 'k', k)
          FROM generate_series"
        if ((tx % 5 == 0)); then
            echo "BEGIN; $ins(1, 2) k; SAVEPOINT sp; $ins(3, 5) k; SELECT pg_sleep(0.01);"
            echo "ROLLBACK TO SAVEPOINT sp; COMMIT;"
        elif (((s + tx) % 2 == 0)); then
            echo "BEGIN; $ins(1, 5) k; SELECT pg_sleep(0.01); COMMIT;"
        else
            echo "BEGIN; $ins(1, 5) k; SELECT pg_sleep(0.01); ROLLBACK;"
        fi
    done
}

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
# the writers start once both workers wait for work, so they overlap however slow the start
wait_sql "SELECT count(*) >= 2 FROM pg_stat_activity WHERE datname = '$TEST_DB'
          AND application_name = 'outbox-relay' AND state = 'idle'" t 60
GENS=()
for ((s = 1; s <= SESSIONS; s++)); do
    gen_session "$s" >"$WORK/session$s.sql"
    psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f "$WORK/session$s.sql" >/dev/null 2>"$WORK/session$s.log" &
    GENS+=($!)
    ENG_PIDS+=($!)
done
for p in "${GENS[@]}"; do wait "$p" || fail "a generator session failed"; done
GEN_END=$(sql "SELECT now()")
COMMITTED=$(sql "SELECT count(*) FROM expected WHERE committed")
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL" "$COMMITTED" 120
kill -TERM "$RELAY"
wait_exit "$RELAY" 60
expect_eq "relay exit code after SIGTERM" "$EXIT_RC" 0

load_record
check_all_published
expect_eq "rows in the table that the test did not commit" \
    "$(sql "SELECT count(*) FROM outbox o LEFT JOIN expected e USING (event_id) WHERE e.committed IS NOT TRUE")" 0
expect_eq "committed rows in the table" "$(sql "SELECT count(*) FROM outbox")" "$COMMITTED"
expect_eq "distinct ok events" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" "$COMMITTED"
expect_eq "record lines for rolled-back events" \
    "$(sql "SELECT count(*) FROM r JOIN expected e USING (event_id) WHERE NOT e.committed")" 0
expect_eq "record lines for events the test never wrote" \
    "$(sql "SELECT count(*) FROM r LEFT JOIN expected e USING (event_id) WHERE e.event_id IS NULL")" 0
# concurrency really happened: publishing started before the writers were done
expect_eq "published while the writers ran" \
    "$(sql "SELECT min(published_at) < '$GEN_END'::timestamptz FROM outbox")" t
check_logs_clean
echo "rollback: $COMMITTED committed, $(sql "SELECT count(*) FROM expected WHERE NOT committed") rolled back," \
     "duplicates: $(dup_count)"
echo "PASS rollback"
