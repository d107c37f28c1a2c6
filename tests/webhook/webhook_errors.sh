#!/bin/bash
# A receiver slower than timeout_ms gets the event again (a timeout is
# retriable and counts an attempt), and it is published once answered in
# time. A receiver nobody listens on is OBX_UNAVAILABLE, not an attempt:
# wh_status checks the driver's side of that, webhook_unreachable the
# engine's.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server errors
fresh_db webhook_errors
relay_cfg() {
    cat >"$WH_DIR/relay.cfg" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 1; batch_size = 50; ordering = "aggregate"; poll_interval_ms = 200; max_attempts = 3;
          backoff = { initial_ms = 50; max_ms = 200; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "$1"; timeout_ms = 3000; secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; output = "hook"; destination = "errors"; } );
CFG
}
relay_cfg "$WH_URL"
"$OBX_BIN" init-db -c "$WH_DIR/relay.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'slow-' || g, CASE WHEN g <= 3 THEN 'order.fail.slow' ELSE 'order.created' END,
         '{}')) FROM generate_series(1, 20) g" >/dev/null
"$OBX_BIN" run -c "$WH_DIR/relay.cfg" --drain >"$WH_DIR/relay-slow.log" 2>&1 || fail "relay run (slow)"
wh_stop
expect_eq "slow: published" "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id LIKE 'slow-%' AND published_at IS NOT NULL")" 20
expect_eq "slow: requests per slow event" \
    "$(awk -F'\t' '$5 == "order.fail.slow" { n[$4]++ } END { for (e in n) print n[e] }' "$WH_REC" | sort -u)" 2
echo "PASS webhook_errors"
