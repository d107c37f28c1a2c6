#!/bin/bash
# A pause set while no relay runs holds from the first claim or read of
# `run` (issue 49, item 6), once per source (SOURCE_MODE=poll|wal|cursor):
# the run reads the control table before its source starts, not a second
# later with the backlog poller (which let 1,500-3,678 of 10,000 events
# through to the paused output).
#  - events for mem (a.*) then mem2 (b.*), `pause --output mem`, then `run`:
#    every mem2 event is published, and mem has no line at all (nothing
#    published, nothing attempted); the log says mem is paused;
#  - `resume --output mem`: every mem event is published, in order per
#    aggregate;
#  - (poll) a control table the relay cannot read stops `run`, in one line.
. "$(dirname "$0")/source_lib.sh" pause_start
. "$(dirname "$0")/pause_lib.sh"
N=2000
# large batches: the more a first claim or read takes, the surer a late pause shows
PAUSE_BATCH=500 pause_cfg "$SOURCE"
init_db "$CFG"
# mem's events first (lower ids, earlier commits): they are what a source
# reaches first when nothing holds them back
enqueue $N a.created
enqueue $N b.created
sql "CREATE TABLE sent AS SELECT event_id, aggregate_type, aggregate_id, id FROM outbox" >/dev/null
"$OBX_BIN" pause -c "$CFG" --output mem --reason "before run" | grep -q "output mem paused" ||
    fail "pause --output mem"

start_relay "$CFG" "$WORK/relay.log"
wait_ok "$REC2" $N
# mem2's events all went after the run started: mem's, first in line, would
# have gone before them had the pause not held from the start
expect_eq "lines for the paused output (published or attempted)" "$(if [ -f "$REC" ]; then wc -l <"$REC"; else echo 0; fi)" 0
grep -q "paused by an operator: output mem" "$WORK/relay.log" || fail "no pause line: $(cat "$WORK/relay.log")"

"$OBX_BIN" resume -c "$CFG" --output mem | grep -q "output mem resumed" || fail "resume --output mem"
wait_ok "$REC" $N
stop_relay "$RELAY_PID" 30

load_record
expect_eq "lines other than ok on mem" "$(sql "SELECT count(*) FROM r WHERE status <> 'ok'")" 0
expect_eq "mem's events published" "$(sql "SELECT count(DISTINCT event_id) FROM r JOIN sent USING (event_id)
    WHERE status = 'ok' AND sent.aggregate_type = 'a'")" $N
expect_eq "order breaks on mem" "$(sql "SELECT count(*) FROM (SELECT s.id, lag(s.id) OVER (PARTITION BY s.aggregate_id ORDER BY r.line) AS prev
    FROM r JOIN sent s USING (event_id) WHERE r.status = 'ok') x WHERE prev > id")" 0
if [ "$MODE" = poll ]; then
    # a control table that cannot be read stops the start, in one line
    sql "ALTER TABLE outbox_relay_control RENAME COLUMN reason TO why" >/dev/null
    enqueue 10 a.more
    start_relay "$CFG" "$WORK/unreadable.log"
    wait_exit "$RELAY_PID" 60
    [ "$EXIT_RC" -ne 0 ] || fail "run started with an unreadable control table: $(cat "$WORK/unreadable.log")"
    expect_eq "lines saying why" "$(grep -c "cannot read what an operator paused" "$WORK/unreadable.log")" 1
    expect_eq "events sent meanwhile" "$(ok_lines "$REC")" $N
fi
[ "$MODE" = wal ] && drop_wal_slots
check_logs_clean
echo "PASS pause_start ($MODE): a pause set before run held from the start (0 of $N sent); after resume all $N went, in order"
