#!/bin/bash
# replay in WAL mode: the rows that stay in the table (outbox_enqueue) were
# published by the stream; 20,000 of a time window are sent again, stopped
# half-way and resumed, as in poll mode (tests/engine/replay_lib.sh); the
# events dead-lettered are not replayed, nor those before the window; the
# table is unchanged. Events of outbox_emit are not in the table: nothing
# to replay them from.
ENG_TEST=walreplay
. "$(dirname "$0")/wal_lib.sh"
. "$ENG_DIR/replay_lib.sh"

fresh_wal_db wal_replay
replay_setup "$WORK/relay.cfg" "source = \"wal\"; wal = { slot = \"$TEST_DB\"; };" 'permanent_event_type = "order.poison";'
init_db "$WORK/relay.cfg"
N=${REPLAY_N:-20000}
enqueue_txns 100 10 100 order.early
sql "UPDATE outbox SET created_at = now() - interval '2 days'" >/dev/null
enqueue_txns "$N" 200 1000
enqueue_txns 100 10 100 order.poison
sql "SELECT outbox_emit('Order', 'agg-1', 'order.emitted', '{}'::jsonb)" >/dev/null
drain "$WORK/relay.cfg" "$WORK/drain.log" 300
expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 100
sql "DROP TABLE IF EXISTS want; CREATE TABLE want AS SELECT id, event_id, aggregate_id FROM outbox WHERE event_type = 'order.created'" >/dev/null
replay_round "wal"
drop_wal_slots
echo "PASS replay (wal): $N events, stopped at $STOPPED_AT and resumed, $DUPS duplicates; SIGKILL: $CRASH_DUPS sent again; order kept, dead letters not replayed, table unchanged"
