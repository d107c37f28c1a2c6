#!/bin/bash
# Live reload in WAL mode under load: events are enqueued in small
# transactions the whole time while the memory driver holds each message
# 50 ms in flight.
#  1. SIGHUP adds an output (mem2) and routes every event to it (b.*): the
#     stream switches once its in-flight events are settled; events
#     committed after the switch go to b.* only.
#  2. SIGHUP removes mem2 and routes back to mem (c.*).
# In the end, by the broker's record: every committed event published, none
# twice, in commit order per aggregate, none after a switch on the old route.
ENG_TEST=walreload
. "$(dirname "$0")/wal_lib.sh"

REC2=$WORK/record2.jsonl
CFG=$WORK/relay.cfg
# config OUTPUTS ROUTES: the relay's config, replaced in one rename
config() {
    cat >"$CFG.new" <<EOF2
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; source = "wal"; wal = { slot = "$TEST_DB"; }; };
outputs = ( $1 );
routes = (
  $2
);
EOF2
    mv "$CFG.new" "$CFG"
}
MEM='{ name = "mem"; driver = "memory"; options = { record_file = "'$REC'"; delay_ms = 50; threaded = true; }; }'
MEM2='{ name = "mem2"; driver = "memory"; options = { record_file = "'$REC2'"; delay_ms = 50; threaded = true; }; }'
switched() { grep -c "wal: switched to config generation $1:" "$WORK/relay.log" || true; }
wait_switched() {
    local i
    for ((i = 0; i < 300 && $(switched "$1") < 1; i++)); do sleep 0.1; done
    expect_eq "the stream on generation $1" "$(switched "$1")" 1
}
# all_ok N: N distinct events have an ok line over both records
all_ok() { cat "$REC" "$REC2" 2>/dev/null | { grep '"status":"ok"' || true; } | cut -d'"' -f4 | sort -u | wc -l; }
wait_all_ok() {
    local i want
    want=$(sql "SELECT count(*) FROM outbox")
    for ((i = 0; i < 600 && $(all_ok) < want; i++)); do sleep 0.2; done
    expect_eq "events with an ok line" "$(all_ok)" "$want"
}

fresh_wal_db wal_reload
config "$MEM" '{ output = "mem"; destination = "a.${aggregate_type}"; }'
init_db "$CFG"
start_relay "$CFG" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/relay.log" "streaming from replication slot" 30
load() { while [ ! -e "$WORK/stop-load" ]; do enqueue_bulk 10 20; sleep 0.1; done; }
load &
LOAD_PID=$!
ENG_PIDS+=("$LOAD_PID")
sleep 1

note "1. SIGHUP: a new output mem2, every route to it"
config "$MEM, $MEM2" '{ output = "mem2"; destination = "b.${aggregate_type}"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "config generation 1 applied .*new or changed: mem2" 30
wait_switched 1
B1=$(sql "SELECT max(id) FROM outbox")
sleep 1

note "2. SIGHUP: mem2 removed, the route back to mem"
config "$MEM" '{ output = "mem"; destination = "c.${aggregate_type}"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "config generation 2 applied .*removed: mem2" 30
wait_switched 2
B2=$(sql "SELECT max(id) FROM outbox")
sleep 1

: >"$WORK/stop-load"
wait "$LOAD_PID"
wait_all_ok
stop_relay "$PID" 30

# one record in the order the two outputs acknowledged (t_us), for the order check
cat "$REC" "$REC2" | python3 -c 'import sys, json
sys.stdout.writelines(sorted(sys.stdin, key=lambda l: json.loads(l)["t_us"]))' >"$WORK/all.jsonl"
load_record "$WORK/all.jsonl"
wal_expected
check_wal_published
expect_eq "duplicates" "$(dup_count)" 0
check_wal_order
dest() { sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE r.status = 'ok' AND $1"; }
[ "$(dest "r.destination LIKE 'a.%'")" -gt 0 ] || fail "nothing went to a.* before the first reload"
[ "$(dest "r.destination LIKE 'b.%'")" -gt 0 ] || fail "nothing went to b.*"
[ "$(dest "r.destination LIKE 'c.%'")" -gt 0 ] || fail "nothing went to c.*"
expect_eq "events after switch 1 on the old route" "$(dest "o.id > $B1 AND r.destination LIKE 'a.%'")" 0
expect_eq "events after switch 2 not on c.*" "$(dest "o.id > $B2 AND r.destination NOT LIKE 'c.%'")" 0
expect_eq "b.* lines outside mem2's record" "$(grep -c '"destination":"b\.' "$REC" || true)" 0
note "a: $(dest "r.destination LIKE 'a.%'"), b: $(dest "r.destination LIKE 'b.%'"), c: $(dest "r.destination LIKE 'c.%'") of $(sql "SELECT count(*) FROM outbox")"
check_logs_clean
drop_wal_slots
echo "PASS wal reload"
