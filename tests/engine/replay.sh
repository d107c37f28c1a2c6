#!/bin/bash
# replay in poll mode: 20,000 published events of a time window sent again to
# another output (--to), each exactly once over a replay stopped half-way by
# SIGTERM and resumed (no event missing, the duplicates counted), in id
# order per aggregate, with the progress line on stderr; rows outside the
# window, pending or dead are not sent; the table is unchanged; a finished
# replay sends nothing more; --aggregate narrows it; bad arguments exit 2.
ENG_TEST=replay
. "$(dirname "$0")/engine_lib.sh"
. "$ENG_DIR/replay_lib.sh"

fresh_db obx_replay
replay_setup "$WORK/relay.cfg" ""
init_db "$WORK/relay.cfg"
N=${REPLAY_N:-20000}
# the window: N events published; around it, published rows before the
# window, and pending and dead rows inside it, none of which is replayed
enqueue_bulk 100 10 order.early
sql "UPDATE outbox SET created_at = now() - interval '2 days', published_at = now()" >/dev/null
enqueue_bulk "$N" 200
enqueue_bulk 50 10 order.pending
enqueue_bulk 50 10 order.dead
sql "UPDATE outbox SET published_at = now() WHERE event_type = 'order.created';
     UPDATE outbox SET dead_at = now(), last_error = 'x' WHERE event_type = 'order.dead';
     DROP TABLE IF EXISTS want; CREATE TABLE want AS SELECT id, event_id, aggregate_id FROM outbox WHERE event_type = 'order.created'" >/dev/null
replay_round "poll"
echo "PASS replay (poll): $N events, stopped at $STOPPED_AT and resumed, $DUPS duplicates; SIGKILL: $CRASH_DUPS sent again; order kept, table unchanged"
