#!/bin/bash
# Live reload under load (issue 15). Events are enqueued in small
# transactions the whole time while the memory driver holds each batch in
# flight for 100 ms.
#  1. SIGHUP with a route to a new output (mem2, destination b.*): every
#     worker switches between batches; events committed after the switch go
#     to b.* only.
#  2. Broken configs (a route to an undefined output; an unknown driver
#     option) sent by SIGHUP: refused with file:line, the running config stays
#     (events still go to b.*). `outbox-relay reload -c` refuses to signal for
#     a broken file (exit 2).
#  3. `outbox-relay reload -c FILE` (the relay found by its config) with
#     mem2 removed, the route back to mem (c.*) and relay.workers changed:
#     workers is named and kept, the rest applies.
# In the end: every event published exactly once over both outputs, none
# lost, no event after a switch on the old route.
ENG_TEST=reload
. "$(dirname "$0")/engine_lib.sh"

REC2=$WORK/record2.jsonl
CFG=$WORK/relay.cfg
# config OUTPUTS ROUTES [WORKERS]: the relay's config, replaced in one rename
config() {
    cat >"$CFG.new" <<EOF2
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = ${3:-2}; batch_size = 20; };
outputs = ( $1 );
routes = (
  $2
);
EOF2
    mv "$CFG.new" "$CFG"
}
MEM='{ name = "mem"; driver = "memory"; options = { record_file = "'$REC'"; delay_ms = 100; }; }'
MEM2='{ name = "mem2"; driver = "memory"; options = { record_file = "'$REC2'"; delay_ms = 100; }; }'
MEM2_BAD='{ name = "mem2"; driver = "memory"; options = { record_file = "'$REC2'"; bogus = 1; }; }'
switched() { grep -c "switched to config generation $1:" "$WORK/relay.log" || true; }
wait_switched() { # wait_switched GEN: both workers took generation GEN
    local i
    for ((i = 0; i < 300 && $(switched "$1") < 2; i++)); do sleep 0.1; done
    expect_eq "workers on generation $1" "$(switched "$1")" 2
}
published_all() { wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 120; }

fresh_db eng_reload
config "$MEM" '{ output = "mem"; destination = "a.${aggregate_type}"; }'
init_db "$CFG"
enqueue_bulk 200 20

start_relay "$CFG" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/relay.log" "relay starting" 30
# the load: 10 events per transaction until told to stop, at most 50 a
# second: well below what the relay drains here (10 aggregates, batches of 20
# held 100 ms, about 160 a second), however fast the machine runs psql (at
# 0.05 s between transactions, a quiet machine enqueued faster than that and
# the backlog never drained)
load() { while [ ! -e "$WORK/stop-load" ]; do enqueue_bulk 10 20; sleep 0.2; done; }
load &
LOAD_PID=$!
ENG_PIDS+=("$LOAD_PID")
wait_sql "SELECT ($HELD_SQL) > 0" t 60

note "1. SIGHUP: route to the new output mem2"
config "$MEM, $MEM2" '{ output = "mem2"; destination = "b.${aggregate_type}"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "config generation 1 applied .*new or changed: mem2" 30
wait_switched 1
B1=$(sql "SELECT max(id) FROM outbox")
enqueue_bulk 50 10
wait_sql "SELECT count(*) FROM outbox WHERE id > $B1 AND published_at IS NULL" 0 120

note "2. broken configs: refused with file:line, generation 1 stays"
config "$MEM, $MEM2" '{ output = "nope"; destination = "x.${aggregate_type}"; }'
if "$OBX_BIN" reload -c "$CFG" >"$WORK/reload-broken.out" 2>&1; then fail "reload -c accepted a broken config"; fi
grep -q "relay.cfg:5: route names output \"nope\"" "$WORK/reload-broken.out" ||
    fail "reload -c: $(cat "$WORK/reload-broken.out")"
kill -HUP "$PID"
wait_log "$WORK/relay.log" "reload refused: .*relay.cfg:5: route names output \"nope\", which is not defined; the running config \(generation 1\) stays" 30
config "$MEM, $MEM2_BAD" '{ output = "mem2"; destination = "x.${aggregate_type}"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "reload refused: .*relay.cfg:3: output \"mem2\": driver \"memory\" has no option \"bogus\"" 30
B2=$(sql "SELECT max(id) FROM outbox")
enqueue_bulk 50 10
wait_sql "SELECT count(*) FROM outbox WHERE id > $B2 AND published_at IS NULL" 0 120
kill -0 "$PID" 2>/dev/null || fail "the relay exited"

note "3. reload -c: mem2 removed, route back to mem, workers cannot change"
config "$MEM" '{ output = "mem"; destination = "c.${aggregate_type}"; }' 3
"$OBX_BIN" reload -c "$CFG" >"$WORK/reload.out" 2>&1 || fail "reload -c: $(cat "$WORK/reload.out")"
grep -q "sent SIGHUP to the relay with pid $PID" "$WORK/reload.out" || fail "reload -c: $(cat "$WORK/reload.out")"
wait_log "$WORK/relay.log" "config generation 2 applied .*outputs kept: mem; new or changed: none; removed: mem2" 30
grep -q "reload: relay.workers cannot change while the relay runs" "$WORK/relay.log" || fail "relay.workers not named"
wait_switched 2
B3=$(sql "SELECT max(id) FROM outbox")
enqueue_bulk 50 10
wait_sql "SELECT count(*) FROM outbox WHERE id > $B3 AND published_at IS NULL" 0 120

: >"$WORK/stop-load"
wait "$LOAD_PID"
published_all
stop_relay "$PID" 30
expect_eq "worker threads (workers kept at 2)" "$(grep -c "worker [0-9]*: switched to config generation 2" "$WORK/relay.log")" 2

cat "$REC" "$REC2" >"$WORK/all.jsonl"
load_record "$WORK/all.jsonl"
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
dest() { sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE r.status = 'ok' AND $1"; }
[ "$(dest "r.destination LIKE 'a.%'")" -gt 0 ] || fail "nothing went to a.* before the first reload"
[ "$(dest "r.destination LIKE 'b.%'")" -gt 0 ] || fail "nothing went to b.*"
[ "$(dest "r.destination LIKE 'c.%'")" -gt 0 ] || fail "nothing went to c.*"
expect_eq "events after switch 1 on the old route" "$(dest "o.id > $B1 AND r.destination LIKE 'a.%'")" 0
expect_eq "events after the refused reloads not on b.*" "$(dest "o.id > $B2 AND o.id <= $B3 AND r.destination NOT LIKE 'b.%' AND r.destination NOT LIKE 'c.%'")" 0
expect_eq "events after switch 2 not on c.*" "$(dest "o.id > $B3 AND r.destination NOT LIKE 'c.%'")" 0
expect_eq "x.* (refused configs) used" "$(dest "r.destination LIKE 'x.%'")" 0
expect_eq "b.* lines outside mem2's record" "$(grep -c '"destination":"b\.' "$REC" || true)" 0
note "a: $(dest "r.destination LIKE 'a.%'"), b: $(dest "r.destination LIKE 'b.%'"), c: $(dest "r.destination LIKE 'c.%'") of $(sql "SELECT count(*) FROM outbox")"
check_logs_clean
echo "PASS reload"
