#!/bin/bash
# A source's fatal end is never silent (issue 54): sources p (poll) and w
# (WAL) in one process; w's replication slot is dropped while it runs.
# The documented behaviour (docs/sources.md, Several outboxes in one
# process): the process stops every other source, lets what they have in
# flight finish, and exits 1, so the service manager restarts it; until it
# exits, /readyz answers 503 naming w and why, w's series stay on /metrics
# with outbox_relay_source_up 0, and the log says at error level which
# source ended and why.
# To see the process between the fatal end and its exit without a timing
# assertion, the memory driver's broker hangs (hang_file) while 100 events
# of p are in flight: p's stop waits for them (max_transaction_ms and
# shutdown_timeout_ms are 10 minutes), and removing the file lets it end.
# Then: exit code 1, and every event of p committed before the slot was
# dropped was delivered (the record file) and marked published.
ENG_TEST=sources_slot_lost
. "$(dirname "$0")/engine_lib.sh"
. "$(dirname "$0")/../wal/walmode.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
PORT=$("$MC" freeport)
. "$(dirname "$0")/../metrics/scrape.sh"

fresh_wal_db sources_lost_w && DB_W=$TEST_DB DSN_W=$TEST_DSN
fresh_db sources_lost_p && DB_P=$TEST_DB DSN_P=$TEST_DSN
SLOT=$DB_W # slots are the cluster's: named after the test's database
eng_extra_cleanup() { wal_drop_slots "$DB_W" || true; }

in_db() { psql -qAt -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
# enqueue_in DB PREFIX N: N events over 20 aggregates PREFIX-0..19, one transaction.
enqueue_in() {
    in_db "$1" "SELECT count(outbox_enqueue('Order', '$2-' || (g % 20), 'order.created',
             jsonb_build_object('n', g))) FROM generate_series(1, $3) g" >/dev/null
}
published() { distinct_ok "$REC" "$1-"; }
wait_published() { wait_distinct "$REC" "$2" "$3" "$1-"; }

CFG=$WORK/relay.cfg
cat >"$CFG" <<EOF
database = { conninfo = "$DSN_P"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 1; batch_size = 100;
          max_transaction_ms = 600000; shutdown_timeout_ms = 600000; };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "mem"; driver = "memory";
              options = { record_file = "$REC"; hang_file = "$WORK/hang"; }; } );
sources = ( { name = "p"; relay = { ordering = "none"; }; },
            { name = "w"; database = { conninfo = "$DSN_W"; };
              relay = { source = "wal"; wal = { slot = "$SLOT"; }; }; } );
EOF
"$OBX_BIN" init-db -c "$CFG" >"$WORK/init.out" || fail "init-db: $(cat "$WORK/init.out")"
start_relay "$CFG" "$WORK/relay.log"
wait_log "$WORK/relay.log" "\[p\] relay starting" 30
wait_log "$WORK/relay.log" "\[w\] streaming from replication slot" 30
enqueue_in "$DB_P" p 200
enqueue_in "$DB_W" w 100
wait_published p 200 60
wait_published w 100 60

# p's next 100 events in flight at a broker that does not answer (p claims
# without ordering: one claim of batch_size takes them all)
touch "$WORK/hang"
enqueue_in "$DB_P" p 100
TEST_DB=$DB_P wait_sql "$HELD_SQL" 100 60

# w's slot goes: its walsender ended, the slot dropped before w takes it again
for ((i = 0; i < 100; i++)); do
    in_db postgres "SELECT count(pg_terminate_backend(active_pid)) FROM pg_replication_slots
                    WHERE slot_name = '$SLOT' AND active_pid IS NOT NULL" >/dev/null
    in_db postgres "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots
                    WHERE slot_name = '$SLOT' AND NOT active" >/dev/null 2>&1 || true
    [ "$(in_db postgres "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$SLOT'")" = 0 ] && break
    sleep 0.1
done
expect_eq "w's slot dropped" "$(in_db postgres "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$SLOT'")" 0

# the log: w's end, at error level, with its reason
wait_log "$WORK/relay.log" "error +\[w\] .*replication slot \"$SLOT\" does not exist" 60
# /readyz: 503, naming w and why (p's stop waits for its hung batch, so the
# process is still there)
for ((i = 0; i < 600; i++)); do
    get /readyz >"$WORK/readyz.txt" 2>/dev/null || true
    [ "$(head -1 "$WORK/readyz.txt")" = 503 ] && break
    kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited before /readyz said why; log: $(tail -3 "$WORK/relay.log")"
    sleep 0.1
done
expect_eq "/readyz after w's slot was dropped ($(tail -1 "$WORK/readyz.txt"))" "$(head -1 "$WORK/readyz.txt")" 503
grep -q '"w":{"status":"not ready","reasons":\["source w ended: START_REPLICATION on slot '"$SLOT"': .*replication slot \\"'"$SLOT"'\\" does not exist' "$WORK/readyz.txt" ||
    fail "/readyz does not name w and why: $(cat "$WORK/readyz.txt")"
get "/readyz?source=w" >"$WORK/readyz_w.txt"
expect_eq "/readyz?source=w" "$(head -1 "$WORK/readyz_w.txt")" 503
wait_log "$WORK/relay.log" "error +\[w\] source w ended: START_REPLICATION on slot $SLOT: .*does not exist.*; stopping the other sources, then exiting 1" 30
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited with p's batch still in flight"
# /metrics: w's series kept, w down, p up
scrape "$WORK/metrics.txt"
expect_eq "outbox_relay_source_up of w" "$(value "$WORK/metrics.txt" 'outbox_relay_source_up{source="w"}')" 0
expect_eq "outbox_relay_source_up of p" "$(value "$WORK/metrics.txt" 'outbox_relay_source_up{source="p"}')" 1
value "$WORK/metrics.txt" 'outbox_relay_wal_streaming{source="w"}' >/dev/null
expect_eq "w's published" "$(value "$WORK/metrics.txt" 'outbox_relay_published_total{source="w"}')" 100

# the broker answers: p's batch finishes, p stops, the process exits 1
rm -f "$WORK/hang"
wait_exit "$RELAY_PID" 120
expect_eq "exit code after w's fatal end" "$EXIT_RC" 1
grep -q "\[p\] relay stopped" "$WORK/relay.log" || fail "p did not stop cleanly: $(tail -5 "$WORK/relay.log")"
check_logs_clean

# every event of p committed before the slot was dropped: delivered and marked
expect_eq "p's events delivered" "$(published p)" 300
TEST_DB=$DB_P
load_record
expect_eq "p: rows not published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
expect_eq "p: rows without an ok line" "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS
    (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
note "sources_slot_lost: w's slot dropped: /readyz 503 naming w, source_up 0, exit 1; p's 300 events delivered"
