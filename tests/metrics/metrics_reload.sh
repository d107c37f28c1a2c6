#!/bin/bash
# /metrics and /readyz across live reloads: the labelled series follow the
# running config generation, and an output (a route: its number and output)
# that keeps its name goes on counting.
#  generation 0: output mem, route 1 -> mem; N0 events.
#  generation 1: outputs mem2 and mem (mem moved to index 1), route 1 -> mem2,
#     route 2 -> mem (for event type "keep.*"); N1 events to mem2, K1 to mem.
#  generation 2: mem2 removed, route 1 -> mem again; N2 events.
# After each, counters are compared with the broker logs (the memory
# driver's record files): per output, per route, in flight 0, output_up of
# the running generation only; /readyz names an output of the running
# generation that is down (unavailable_file), not one that was removed.
ENG_TEST=metrics_reload
. "$(dirname "$0")/../engine/engine_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}

REC2=$WORK/record2.jsonl
CFG=$WORK/relay.cfg
PORT=$("$MC" freeport)
# config OUTPUTS ROUTES: the relay's config, replaced in one rename
config() {
    cat >"$CFG.new" <<EOF2
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 20; };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( $1 );
routes = (
  $2
);
EOF2
    mv "$CFG.new" "$CFG"
}
MEM='{ name = "mem"; driver = "memory"; options = { record_file = "'$REC'"; unavailable_file = "'$WORK/down'"; }; }'
MEM2='{ name = "mem2"; driver = "memory"; options = { record_file = "'$REC2'"; unavailable_file = "'$WORK/down2'"; }; }'

. "$(dirname "$0")/scrape.sh"
ok_lines() { if [ -f "$1" ]; then grep -c '"status":"ok"' "$1" || true; else echo 0; fi; }
published_all() { wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 120; }
switched() { grep -c "switched to config generation $1:" "$WORK/relay.log" || true; }
wait_switched() { # both workers took generation $1 (a worker switches at its next round)
    local i
    for ((i = 0; i < 300 && $(switched "$1") < 2; i++)); do sleep 0.1; done
    expect_eq "workers on generation $1" "$(switched "$1")" 2
}

fresh_db metrics_reload
config "$MEM" '{ output = "mem"; destination = "a"; }'
init_db "$CFG"
start_relay "$CFG" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/relay.log" "relay starting" 30

note "generation 0: mem"
enqueue_bulk 60 10
published_all
scrape "$WORK/g0.txt"
expect_eq "mem published (gen 0)" "$(value "$WORK/g0.txt" 'outbox_relay_output_published_total{output="mem"}')" 60
expect_eq "route 1 mem (gen 0)" "$(value "$WORK/g0.txt" 'outbox_relay_route_published_total{route="1",output="mem"}')" 60
expect_eq "broker log mem (gen 0)" "$(ok_lines "$REC")" 60

note "generation 1: mem2 first, route 1 -> mem2, route 2 -> mem"
config "$MEM2, $MEM" '{ event_type = "order.*"; output = "mem2"; destination = "b"; },
  { event_type = "keep.*"; output = "mem"; destination = "k"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "config generation 1 applied .*outputs kept: mem; new or changed: mem2" 30
wait_switched 1
enqueue_bulk 40 10
enqueue_bulk 15 5 keep.it
published_all
scrape "$WORK/g1.txt"
expect_eq "broker log mem2" "$(ok_lines "$REC2")" 40
expect_eq "broker log mem" "$(ok_lines "$REC")" 75
expect_eq "mem2 published" "$(value "$WORK/g1.txt" 'outbox_relay_output_published_total{output="mem2"}')" 40
expect_eq "mem published (kept: goes on)" "$(value "$WORK/g1.txt" 'outbox_relay_output_published_total{output="mem"}')" 75
expect_eq "route 1 mem2" "$(value "$WORK/g1.txt" 'outbox_relay_route_published_total{route="1",output="mem2"}')" 40
expect_eq "route 2 mem" "$(value "$WORK/g1.txt" 'outbox_relay_route_published_total{route="2",output="mem"}')" 15
expect_eq "mem2 up" "$(value "$WORK/g1.txt" 'outbox_relay_output_up{output="mem2"}')" 1
expect_eq "mem2 in flight" "$(value "$WORK/g1.txt" 'outbox_relay_output_in_flight{output="mem2"}')" 0
expect_eq "mem2 commit-to-ack count" "$(value "$WORK/g1.txt" 'outbox_relay_commit_to_ack_seconds_count{output="mem2"}')" 40
if grep -q 'route="1",output="mem"}' "$WORK/g1.txt"; then fail "route 1 -> mem of generation 0 still listed"; fi
touch "$WORK/down2"
enqueue_bulk 1 1
wait_log "$WORK/relay.log" "output mem2 unavailable" 60
get /readyz >"$WORK/ready1.txt"
expect_eq "readyz with mem2 down" "$(head -1 "$WORK/ready1.txt")" 503
grep -q '"output mem2: unavailable"' "$WORK/ready1.txt" || fail "readyz: $(cat "$WORK/ready1.txt")"

note "generation 2: mem2 removed, route 1 -> mem"
config "$MEM" '{ output = "mem"; destination = "c"; }'
kill -HUP "$PID"
wait_log "$WORK/relay.log" "config generation 2 applied .*removed: mem2" 30
wait_switched 2
enqueue_bulk 30 10
published_all
scrape "$WORK/g2.txt"
expect_eq "broker log mem" "$(ok_lines "$REC")" $((75 + 1 + 30))
expect_eq "mem published (gen 2)" "$(value "$WORK/g2.txt" 'outbox_relay_output_published_total{output="mem"}')" $((75 + 1 + 30))
expect_eq "route 1 mem (gen 0 and 2)" "$(value "$WORK/g2.txt" 'outbox_relay_route_published_total{route="1",output="mem"}')" $((60 + 1 + 30))
if grep -q 'output="mem2"' "$WORK/g2.txt"; then fail "removed output mem2 still listed"; fi
if grep -q 'route="2"' "$WORK/g2.txt"; then fail "route 2 of generation 1 still listed"; fi
expect_eq "readyz without mem2" "$(get /readyz | head -1)" 200
expect_eq "healthz" "$(get /healthz | head -1)" 200

stop_relay "$PID" 30
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" $((60 + 55 + 1 + 30))
check_logs_clean
echo "PASS metrics_reload"
