#!/bin/bash
# Failover, WAL mode, PostgreSQL 15 (slots are not copied to a standby): a
# PRIVATE primary and a synchronous standby (ports WAL_FAILOVER_PORT or free_ports,
# and the next one), one multi-host conninfo (target_session_attrs =
# read-write) for the relay and the producer (rows that stay). Mid-run the
# primary crashes and the standby is promoted. Shown:
# - the relay reconnects to the new primary, finds no slot there and exits 1
#   saying so and what to run (it never streams from a slot it did not have);
# - the README's recovery: `init-db` makes a slot at the current position;
#   rows created since a time the relay was known caught up (the old slot
#   confirmed past it) are replayed in poll mode (`run --drain` with source
#   "poll", older rows marked published first); then WAL mode again.
# Counted on the broker's side over all phases: every event of the new
# primary's table received, none unknown, first deliveries in order per
# aggregate; GAP (events that only the replay delivered) and duplicates
# printed.
ENG_TEST=walfailover
. "$(dirname "$0")/wal_lib.sh"
. "$(dirname "$0")/../engine/churn_lib.sh"

failover_pair "${WAL_FAILOVER_PORT:-$(free_ports 2)}" wal_failover
churn_cfg "$WORK/relay.cfg" "source = \"wal\"; wal = { slot = \"$TEST_DB\"; };"
churn_cfg "$WORK/replay.cfg" ""
init_db "$WORK/relay.cfg"
"$RCONSUME" "$AMQP_URL" declare "$CHURN_Q" "$CHURN_X" "churn.$CHURN_Q.#" || fail "declare the queue"
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_log "$WORK/relay.log" "streaming from replication slot" 60
producer_start "$TEST_DSN" 300 20 0.02
wait_sql "SELECT count(*) >= 2000 FROM outbox" t 90
# a point the relay is known to have passed: the slot confirmed past it
CAUGHT_UP=$(sql "SELECT now()")
MARK_LSN=$(sql "SELECT pg_current_wal_lsn()")
wait_sql "SELECT confirmed_flush_lsn >= '$MARK_LSN' FROM pg_replication_slots WHERE slot_name = '$TEST_DB'" t 120
wait_sql "SELECT count(*) >= 3000 FROM outbox" t 90

pg1 pg-crash
pg2 pg-promote
export PGPORT=$P2
expect_eq "the standby is a primary" "$(sql "SELECT pg_is_in_recovery()")" f
expect_eq "slots on the promoted standby" "$(sql "SELECT count(*) FROM pg_replication_slots")" 0
PROMOTED_AT=$(sql "SELECT now()")
wait_exit "$RELAY_PID" 120
expect_eq "relay exit code on a primary without its slot" "$EXIT_RC" 1
grep -q "replication slot \"$TEST_DB\" does not exist" "$WORK/relay.log" ||
    fail "no line saying the slot is missing: $(grep -v ' info ' "$WORK/relay.log" | tail -3)"
grep -q 'outbox-relay init-db' "$WORK/relay.log" || fail "the relay does not say what to run"
# the producer goes on writing to the new primary meanwhile
wait_sql "SELECT count(*) >= 4000 FROM outbox" t 90
producer_stop
broker_read "$WORK/before.ids"
# the gap: committed, never relayed, and in no slot (on the old primary after
# its last confirmed position, or on the new one before its slot)
sql "CREATE TABLE before_ids (event_id uuid)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy before_ids FROM '$WORK/before.ids'" >/dev/null
GAP_OLD=$(sql "SELECT count(*) FROM outbox o WHERE created_at < '$PROMOTED_AT'
               AND NOT EXISTS (SELECT 1 FROM before_ids b WHERE b.event_id = o.event_id)")
GAP_NEW=$(sql "SELECT count(*) FROM outbox o WHERE created_at >= '$PROMOTED_AT'
               AND NOT EXISTS (SELECT 1 FROM before_ids b WHERE b.event_id = o.event_id)")
[ "$GAP_NEW" -gt 0 ] || fail "no event was committed on the new primary before its slot: nothing shown"

# the operator: a slot on the new primary, then the replay of rows created
# since the relay was known caught up, in poll mode
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >"$WORK/init2.out" 2>&1 || fail "init-db on the new primary: $(cat "$WORK/init2.out")"
producer_start "$TEST_DSN" 300 20 0.02 "$PRODUCED_K" # writers go on
sql "UPDATE outbox SET published_at = now() WHERE created_at < '$CAUGHT_UP'" >/dev/null
REPLAYED=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")
drain "$WORK/replay.cfg" "$WORK/replay.log" 120
start_relay "$WORK/relay.cfg" "$WORK/relay2.log"
wait_log "$WORK/relay2.log" "streaming from replication slot" 60
wait_sql "SELECT count(*) >= 6000 FROM outbox" t 90
producer_stop
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
wait_sql "SELECT confirmed_flush_lsn >= '$END_LSN' FROM pg_replication_slots WHERE slot_name = '$TEST_DB'" t 180
stop_relay "$RELAY_PID" 30
broker_read "$WORK/after.ids"

broker_compare "$WORK/before.ids" "$WORK/after.ids"
N=$(sql "SELECT count(*) FROM outbox")
check_logs_clean
echo "failover (WAL): $N events; the relay exited 1 on the new primary (no slot);" \
     "in no slot: $GAP_OLD committed on the old primary after its last confirmed position, $GAP_NEW on the new one before its slot;" \
     "replayed from the table in poll mode: $REPLAYED (created since the relay was last known caught up);" \
     "0 lost over both phases, duplicates $BROKER_DUPS"
echo "PASS wal failover"
