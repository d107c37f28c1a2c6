# The CloudEvents tests' shared part (issue 30): events for two outputs of
# one driver, "bin" (binary mode) and "str" (structured mode), relayed in one
# run; each output's messages are dumped by a consumer and parsed by the
# CloudEvents SDK for JavaScript (ce_check.js), not by the relay's code.
# Source after tests/lib.sh; WORK must be set.
CE_DIR=$OBX_SRC/tests/cloudevents
CE_NODE_DIR=${CE_NODE_DIR:-$SVC_DIR/node}
CE_N=${CE_N:-25} # events per mode
[ -d "$CE_NODE_DIR/node_modules/cloudevents" ] ||
    fail "the CloudEvents SDK is not in $CE_NODE_DIR: run tests/services/services.sh install (or node-sdk)"

# ce_enqueue: CE_N events per mode over 5 aggregates, payloads with escapes and non-ASCII text.
ce_enqueue() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 5), m || '.order.created',
             jsonb_build_object('n', g, 'name', 'Zoë \"q\" \\ ünïcode', 'items', jsonb_build_array(g, 'x', null))))
         FROM generate_series(1, $CE_N) g, unnest(ARRAY['ce.bin', 'ce.str']) m" >/dev/null
}

# ce_expected FILE: the enqueued rows as JSON lines, time as the relay writes it.
ce_expected() {
    sql "SELECT json_build_object('id', event_id, 'event_type', event_type,
             'aggregate_type', aggregate_type, 'aggregate_id', aggregate_id, 'payload', payload,
             'created_ms', floor(extract(epoch FROM created_at) * 1000)::bigint,
             'time', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))
         FROM outbox" > "$1"
}

# ce_cfg FILE DRIVER OPTIONS DEST_BIN DEST_STR [WORKERS]: a relay
# config with the outputs "bin" and "str" of DRIVER (OPTIONS: the driver's
# own, "key = value; ..."), routed by event type.
ce_cfg() {
    cat > "$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = {
  workers = ${6:-1};
  batch_size = 100;
  ordering = "aggregate";
  poll_interval_ms = 200;
  drivers_dir = "\${OBX_DRIVERS}";
};
outputs = (
  { name = "bin"; driver = "$2";
    options = { $3 format = "cloudevents";
                ce_source = "/orders/\${aggregate_type}"; ce_subject = "\${aggregate_id}"; }; },
  { name = "str"; driver = "$2";
    options = { $3 format = "cloudevents"; ce_mode = "structured";
                ce_type = "com.example.\${event_type}"; }; }
);
routes = (
  { event_type = "ce.bin.*"; aggregate_type = "*"; output = "bin"; destination = "$4"; },
  { event_type = "ce.str.*"; aggregate_type = "*"; output = "str"; destination = "$5"; }
);
CFG
}

# ce_run CFG: init-db, enqueue, relay until drained; the rows in $WORK/expected.
# In WAL mode (CE_SOURCE=wal) rows are not marked: the consumers' checks count.
ce_run() {
    "$OBX_BIN" init-db -c "$1" >/dev/null || fail "init-db"
    ce_enqueue
    ce_expected "$WORK/expected"
    timeout 120 "$OBX_BIN" run -c "$1" --drain 2> "$WORK/relay.log" ||
        { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
    local want=$((2 * CE_N))
    [ "${CE_SOURCE:-poll}" = poll ] || want=0 # WAL mode writes nothing per event
    expect_eq "rows marked published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$want"
}

# ce_check BINDING MODE DUMP: the SDK parses and checks every dumped message.
ce_check() {
    NODE_PATH=$CE_NODE_DIR/node_modules node "$CE_DIR/ce_check.js" "$1" "$2" "$3" "$WORK/expected" ||
        { head -c 2000 "$3" >&2; fail "CloudEvents SDK check, $1 $2"; }
}
