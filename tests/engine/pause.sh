#!/bin/bash
# Operator control: `pause` and `resume` of one output and of the whole
# source, while the relay runs (SOURCE_MODE=wal: in WAL mode, the same).
#  - output mem paused: the events routed to it wait (none published, no
#    attempt counted, none dead) while mem2's are published; status and
#    /metrics (outbox_relay_output_paused) say so; resume: they are
#    published, in order per aggregate.
#    status --json too: "pauses" (the source and every output: paused, since,
#    by, reason) and "paused" in each per-output entry (poll mode).
#  - the source paused: nothing is published; resume: everything is; status
#    and status --json say so.
#  - a second pause says so; an unknown output or neither flag: exit 2.
. "$(dirname "$0")/mode_lib.sh" pause
. "$(dirname "$0")/pause_lib.sh"
mode_db pause
pause_cfg "$SOURCE" "metrics = { listen = \"127.0.0.1:$PORT\"; };"
init_db "$CFG"
start_relay "$CFG" "$WORK/relay.log"
wait_log "$WORK/relay.log" "relay starting" 30
cli() { "$OBX_BIN" "$@" -c "$CFG"; }

"$OBX_BIN" pause -c "$CFG" --output nosuch >"$WORK/bad.out" 2>&1 && fail "pause of an unknown output succeeded"
grep -q 'has no output "nosuch"' "$WORK/bad.out" || fail "unknown output: $(cat "$WORK/bad.out")"
"$OBX_BIN" pause -c "$CFG" >"$WORK/bad.out" 2>&1 && fail "pause with neither --output nor --source succeeded"

cli pause --output mem --reason "consumer migration" | grep -q "output mem paused" || fail "pause --output mem"
wait_log "$WORK/relay.log" "paused by an operator: output mem" 10
cli pause --output mem | grep -q "already paused" || fail "a second pause did not say so"
enqueue 100 a.created
enqueue 100 b.created
wait_ok "$REC2" 100
sleep 2 # a paused output's events wait; they would have gone by now
expect_eq "events published to the paused output" "$(ok_lines "$REC")" 0
scrape "$WORK/paused.txt"
expect_eq "outbox_relay_output_paused mem" "$(value "$WORK/paused.txt" 'outbox_relay_output_paused{output="mem"}')" 1
expect_eq "outbox_relay_output_paused mem2" "$(value "$WORK/paused.txt" 'outbox_relay_output_paused{output="mem2"}')" 0
expect_eq "outbox_relay_output_up mem (not an outage)" "$(value "$WORK/paused.txt" 'outbox_relay_output_up{output="mem"}')" 1
cli status >"$WORK/status.out"
grep -q "paused: *output mem since .* (consumer migration)" "$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"
cli status --json >"$WORK/status.json" || fail "status --json"
expect_eq "status --json: pauses of mem (paused, reason, a since)" \
    "$(jq -r '.pauses.outputs.mem | "\(.paused) \(.reason) \(.since != null)"' "$WORK/status.json")" "true consumer migration true"
expect_eq "status --json: mem2 and the source not paused" \
    "$(jq -r '"\(.pauses.outputs.mem2.paused) \(.pauses.source.paused)"' "$WORK/status.json")" "false false"
if [ "$MODE" = poll ]; then
    expect_eq "status --json: paused in the per-output entries" \
        "$(jq -r '[.outputs[] | "\(.output)=\(.paused)"] | join(",")' "$WORK/status.json")" "mem=true,mem2=false"
fi
if [ "$MODE" = poll ]; then # per output: waiting, failing, published in the last minute
    grep -qE '^  mem +100, 0, 0$' "$WORK/status.out" || fail "status per output (mem): $(cat "$WORK/status.out")"
    grep -qE '^  mem2 +0, 0, 100$' "$WORK/status.out" || fail "status per output (mem2): $(cat "$WORK/status.out")"
    expect_eq "status --json, mem waiting" "$(cli status --json | jq '.outputs[] | select(.output == "mem") | .waiting')" 100
fi

cli resume --output mem | grep -q "output mem resumed" || fail "resume --output mem"
wait_ok "$REC" 100

expect_eq "status --json after resume: mem paused" "$(cli status --json | jq -r '.pauses.outputs.mem.paused')" false
cli status | grep -q "paused:" && fail "status after resume still says paused: $(cli status)"

cli pause --source --reason "db upgrade" | grep -q "the source paused" || fail "pause --source"
wait_log "$WORK/relay.log" "paused by an operator: the source" 10
cli status | grep -q "paused: *the source (nothing is sent) since .* (db upgrade)" || fail "status, source paused: $(cli status)"
expect_eq "status --json: the source paused (reason, a since)" \
    "$(cli status --json | jq -r '.pauses.source | "\(.paused) \(.reason) \(.since != null)"')" "true db upgrade true"
enqueue 50 b.more
sleep 2
expect_eq "events published while the source is paused" "$(ok_lines "$REC2")" 100
cli resume --source >/dev/null
wait_ok "$REC2" 150
cli resume --source | grep -q "was not paused" || fail "a second resume did not say so"
stop_relay "$RELAY_PID" 30

load_record
sql "CREATE TABLE rec2 (j jsonb); CREATE VIEW r2 AS SELECT (j->>'event_id')::uuid AS event_id, j->>'status' AS status FROM rec2" >/dev/null
psql -qAt -d "$TEST_DB" -c "\\copy rec2(j) FROM '$REC2' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')" >/dev/null
expect_eq "events not published" "$(sql "SELECT count(*) FROM (SELECT event_id FROM outbox EXCEPT
    SELECT event_id FROM r WHERE status = 'ok' EXCEPT SELECT event_id FROM r2 WHERE status = 'ok') x")" 0
expect_eq "lines other than ok (attempts)" "$(sql "SELECT (SELECT count(*) FROM r WHERE status <> 'ok') + (SELECT count(*) FROM r2 WHERE status <> 'ok')")" 0
expect_eq "order breaks on mem" "$(sql "SELECT count(*) FROM (SELECT o.id, lag(o.id) OVER (PARTITION BY o.aggregate_type, o.aggregate_id ORDER BY r.line) AS prev
    FROM r JOIN outbox o USING (event_id) WHERE r.status = 'ok') x WHERE prev > id")" 0
if [ "$MODE" = wal ]; then
    expect_eq "dead letters" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
    drop_wal_slots
else
    expect_eq "dead rows, attempts counted" "$(sql "SELECT count(*) FILTER (WHERE dead_at IS NOT NULL), coalesce(sum(attempts), 0) FROM outbox")" "0|250"
fi
echo "PASS pause ($MODE): an output and the source paused and resumed while the relay ran; nothing sent to them meanwhile, nothing attempted"
