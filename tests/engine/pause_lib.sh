# shellcheck shell=bash
# Helpers of the pause and admin tests, sourced after engine_lib.sh: two memory
# outputs, mem (record $REC, events "a.*") and mem2 ($REC2, events "b.*").
REC2=$WORK/record2.jsonl
CFG=$WORK/relay.cfg

# pause_cfg RELAY_SETTINGS [TOP_LEVEL]: the config, in $CFG (PAUSE_BATCH: the
# batch size, 20)
pause_cfg() {
    cat >"$CFG" <<EOF2
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = ${PAUSE_BATCH:-20};
          max_attempts = 1; $1 };
${2:-}
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; },
            { name = "mem2"; driver = "memory"; options = { record_file = "$REC2"; }; } );
routes = ( { event_type = "a.*"; output = "mem"; destination = "a"; },
           { event_type = "b.*"; output = "mem2"; destination = "b"; } );
EOF2
}

ok_lines() { if [ -f "$1" ]; then grep -c '"status":"ok"' "$1" || true; else echo 0; fi; }
# wait_ok FILE N: until FILE has N ok lines (60 s)
wait_ok() {
    local i
    for ((i = 0; i < 600 && $(ok_lines "$1") < $2; i++)); do sleep 0.1; done
    expect_eq "ok lines in $(basename "$1")" "$(ok_lines "$1")" "$2"
}
# enqueue N TYPE: N events of TYPE over 10 aggregates of its own (an
# aggregate with an event for a paused output waits whole, to keep its order)
enqueue() {
    sql "SELECT count(outbox_enqueue('${2%%.*}', 'agg-' || (g % 10), '$2', jsonb_build_object('n', g)))
         FROM generate_series(1, $1) g" >/dev/null
}
