#!/bin/bash
# status lists the dead events (issue 49, item 5 of "answers, not errors"),
# once per source (SOURCE_MODE=poll|wal|cursor): the first 10, oldest first,
# each with its event id, type, aggregate, attempts and last error (poll: the
# outbox rows with dead_at; WAL and cursor: the dead-letter table); --dead N
# for more, --dead 0 for none; --json as "dead_events". And status before
# init-db says, in one line, to run init-db, not a PostgreSQL error.
. "$(dirname "$0")/source_lib.sh" status_dead
source_cfg "$WORK/relay.cfg" "" "permanent_event_type = \"order.poison\";"
CFG=$WORK/relay.cfg

# before init-db: one line, naming what to run
rc=0
"$OBX_BIN" status -c "$CFG" >"$WORK/pre.out" 2>"$WORK/pre.err" || rc=$?
expect_eq "exit of status before init-db" "$rc" 1
expect_eq "lines of status before init-db" "$(grep -c . "$WORK/pre.err")" 1
grep -q "run \`outbox-relay init-db -c $CFG\`" "$WORK/pre.err" || fail "status before init-db: $(cat "$WORK/pre.err")"
grep -qE "ERROR|LINE [0-9]" "$WORK/pre.err" && fail "a raw PostgreSQL error: $(cat "$WORK/pre.err")"
rc=0
"$OBX_BIN" status -c "$CFG" --json >"$WORK/pre.out" 2>"$WORK/pre.err" || rc=$?
expect_eq "exit of status --json before init-db" "$rc" 1
grep -q "run \`outbox-relay init-db" "$WORK/pre.err" || fail "status --json before init-db: $(cat "$WORK/pre.err")"

init_db "$CFG"
# 15 poison events on aggregates p1..p15 (one transaction each, so their
# order is known), 20 good ones
for i in $(seq 1 15); do
    sql "SELECT outbox_enqueue('Order', 'p$i', 'order.poison', '{\"i\": $i}'::jsonb)" >/dev/null
done
sql "SELECT count(outbox_enqueue('Order', 'g' || g, 'order.created', '{}'::jsonb)) FROM generate_series(1, 20) g" >/dev/null
"$OBX_BIN" status -c "$CFG" >"$WORK/none.out" || fail "status with nothing dead"
grep -q "^dead events:" "$WORK/none.out" && fail "dead events listed before any: $(cat "$WORK/none.out")"
# the relay until every event is published or dead (not --drain: the cursor
# source's drain can end while rows wait behind a transaction open elsewhere
# on the server), then stopped
if [ "$MODE" = poll ]; then
    DONE="SELECT count(*) FILTER (WHERE dead_at IS NOT NULL) || '/' || count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL) FROM outbox"
else
    DONE="SELECT (SELECT count(*) FROM outbox_dead_letter) || '/' || (20 - (SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'))"
fi
start_relay "$CFG" "$WORK/relay.log"
for ((i = 0; i < 600; i++)); do # a liveness bound of 120 s
    [ "$MODE" = poll ] || load_record
    [ "$(sql "$DONE")" = 15/0 ] && break
    sleep 0.2
done
expect_eq "dead/left once the relay is done" "$(sql "$DONE")" 15/0
kill -TERM "$RELAY_PID"
wait_exit "$RELAY_PID" 60

"$OBX_BIN" status -c "$CFG" >"$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"
grep -qE "^dead: +15$" "$WORK/status.out" || fail "status does not count 15 dead: $(cat "$WORK/status.out")"
grep -q "^dead events: *10 of 15, oldest first (--dead N lists more)$" "$WORK/status.out" ||
    fail "no dead events heading: $(cat "$WORK/status.out")"
# each: the event id, dead since, attempts; its type and aggregate; its last error
# (a refusal is final at once when the output took something sent as late,
# else on the third attempt: the circuit breaker, core/host/health.h)
listed=$(grep -cE "^  [0-9a-f-]{36}  dead since [0-9T:Z-]+  attempts [1-3]$" "$WORK/status.out")
expect_eq "dead events listed" "$listed" 10
expect_eq "type and aggregate lines" "$(grep -cE '^    order\.poison  Order/p[0-9]+$' "$WORK/status.out")" 10
expect_eq "last error lines" "$(grep -c '^    last error: .*rejected by memory driver' "$WORK/status.out")" 10
# oldest first: poll marks the batch dead at once, so by creation, p1..p10 in
# order (WAL and cursor write each dead letter when its outcome comes)
if [ "$MODE" = poll ]; then
    expect_eq "the first 10, oldest first" \
        "$(grep -oE '^    order\.poison  Order/p[0-9]+$' "$WORK/status.out" | sed 's|.*/||' | paste -sd,)" \
        "p1,p2,p3,p4,p5,p6,p7,p8,p9,p10"
fi

eid() { sql "SELECT event_id FROM outbox WHERE aggregate_id = '$1'"; }
"$OBX_BIN" status -c "$CFG" --dead 20 >"$WORK/all.out" || fail "status --dead 20"
grep -q "^dead events: *15 of 15, oldest first$" "$WORK/all.out" || fail "--dead 20: $(cat "$WORK/all.out")"
for i in $(seq 1 15); do
    grep -q "^  $(eid "p$i")  dead since" "$WORK/all.out" || fail "--dead 20 does not list p$i"
done
"$OBX_BIN" status -c "$CFG" --dead 0 >"$WORK/zero.out" || fail "status --dead 0"
grep -q "^dead events:" "$WORK/zero.out" && fail "--dead 0 listed: $(cat "$WORK/zero.out")"
grep -qE "^dead: +15$" "$WORK/zero.out" || fail "--dead 0: $(cat "$WORK/zero.out")"

"$OBX_BIN" status -c "$CFG" --json --dead 3 >"$WORK/status.json" || fail "status --json"
expect_eq "json dead_events" "$(jq -r '.dead_events | length' "$WORK/status.json")" 3
expect_eq "json dead event fields" \
    "$(jq -r '.dead_events[0] | [.event_type, (.aggregate | test("^Order/p[0-9]+$")), (.attempts <= 3), (.last_error | test("rejected by memory driver")), (.event_id | length), (.dead_at != null)] | map(tostring) | join(",")' "$WORK/status.json")" \
    "order.poison,true,true,true,36,true"

rc=0
"$OBX_BIN" status -c "$CFG" --dead many >/dev/null 2>&1 || rc=$?
expect_eq "exit of --dead many" "$rc" 2
rc=0
"$OBX_BIN" check-config -c "$CFG" --dead 3 >/dev/null 2>&1 || rc=$?
expect_eq "exit of check-config --dead" "$rc" 2
echo "PASS status_dead ($MODE)"
