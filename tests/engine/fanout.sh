#!/bin/bash
# Fan-out (issue 30): a route to three outputs, each keeping its own
# delivery state (SOURCE_MODE=wal: the source in WAL mode, the same).
#  - init-db makes a table per target; the config's refusals (one output in
#    the list, one named twice, an undefined one).
#  - m3 unavailable for a minute while producers commit: m1 and m2 get every
#    event exactly once meanwhile, m3 none; once back, m3 gets every event,
#    in order per aggregate; nothing is dead anywhere.
#  - /metrics and status name the source and its targets (outbox.m1 ...).
#  - run --drain exits once each target has published all its source copied.
. "$(dirname "$0")/mode_lib.sh" fanout
mode_db fanout
REC1=$WORK/m1.jsonl REC2=$WORK/m2.jsonl REC3=$WORK/m3.jsonl
DOWN=$WORK/m3.down
CFG=$WORK/relay.cfg

# fanout_cfg FILE ROUTE_OUTPUT: three memory outputs, one route to ROUTE_OUTPUT
fanout_cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 50;
          max_attempts = 3; backoff = { initial_ms = 100; max_ms = 500; }; $SOURCE };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "m1"; driver = "memory"; options = { record_file = "$REC1"; }; },
            { name = "m2"; driver = "memory"; options = { record_file = "$REC2"; }; },
            { name = "m3"; driver = "memory"; options = { record_file = "$REC3"; unavailable_file = "$DOWN"; }; } );
routes = ( { event_type = "order.*"; output = $2; destination = "orders.\${event_type}";
             set_headers = { target = "copied"; }; } );
EOF
}
refused() { # refused WHAT PATTERN ROUTE_OUTPUT
    fanout_cfg "$WORK/bad.cfg" "$3"
    "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1 && fail "$1: accepted"
    grep -q -- "$2" "$WORK/bad.out" || fail "$1: $(cat "$WORK/bad.out")"
}
refused "a list of one" "names two outputs or more" '["m1"]'
refused "an output twice" 'names "m1" twice' '["m1", "m1"]'
refused "an undefined output" 'route names output "nope"' '["m1", "nope"]'

fanout_cfg "$CFG" '["m1", "m2", "m3"]'
"$OBX_BIN" init-db -c "$CFG" >"$WORK/init.out" || fail "init-db: $(cat "$WORK/init.out")"
for t in m1 m2 m3; do
    expect_eq "table outbox_to_$t" "$(sql "SELECT to_regclass('outbox_to_$t') IS NOT NULL")" t
done

touch "$DOWN" # m3 away from the start
start_relay "$CFG" "$WORK/relay.log"
wait_log "$WORK/relay.log" "\[outbox.m3\] relay starting" 30
produce_paced 6000 50 # ten events every 100 ms over 50 aggregates: a minute
wait "$PRODUCER" || fail "the producer failed"
wait_distinct "$REC1" 6000 60
wait_distinct "$REC2" 6000 60
expect_eq "m1: events acknowledged more than once during m3's outage" "$(extra_ok "$REC1")" 0
expect_eq "m2: events acknowledged more than once during m3's outage" "$(extra_ok "$REC2")" 0
expect_eq "m3: events acknowledged while away" "$(distinct_ok "$REC3")" 0
grep -q '"destination":"orders.order.created"' "$REC1" || fail "m1's destination: $(head -1 "$REC1")"
scrape "$WORK/metrics.txt"
expect_eq "outbox.m1's published" "$(value "$WORK/metrics.txt" 'outbox_relay_output_published_total{source="outbox.m1",output="m1"}')" 6000
expect_eq "m3 up while away" "$(value "$WORK/metrics.txt" 'outbox_relay_output_up{source="outbox.m3",output="m3"}')" 0
"$OBX_BIN" status -c "$CFG" >"$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"
grep -q "^source outbox.m3" "$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"

rm -f "$DOWN"
wait_distinct "$REC3" 6000 120

stop_relay "$RELAY_PID" 60

# run --drain ends once every target has published what its source copied
enqueue_bulk 500 50
drain "$CFG" "$WORK/drain.log" 120
for t in 1 2 3; do
    expect_eq "m$t after the drain" "$(distinct_ok "$WORK/m$t.jsonl")" 6500
done
check_logs_clean

# every target: every event once, in order per aggregate, nothing dead
for t in 1 2 3; do
    load_record "$WORK/m$t.jsonl"
    expect_eq "m$t: events of the source without an ok" "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS
        (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
    check_order
    expect_eq "outbox_to_m$t: dead or unpublished" \
        "$(sql "SELECT count(*) FROM outbox_to_m$t WHERE dead_at IS NOT NULL OR published_at IS NULL")" 0
done
expect_eq "m3: events acknowledged more than once" "$(extra_ok "$REC3")" 0
if [ "$MODE" = poll ]; then
    expect_eq "dead in the source" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
else
    expect_eq "dead in the source" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
    drop_wal_slots
fi
note "fan-out ($MODE): 6,500 events to m1, m2 and m3, m3 away while 6,000 were committed; each once, in order"
