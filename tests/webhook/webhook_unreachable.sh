#!/bin/bash
# ABI 1.1, engine side: a receiver nobody listens on is the output's state,
# not the events' fault. While it is down no attempt is counted and
# nothing is dead-lettered; once it listens, everything is published.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server unreachable-gone
GONE_URL=$WH_URL
wh_stop
wh_server unreachable
fresh_db webhook_unreachable
relay_cfg() {
    cat >"$WH_DIR/relay.cfg" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 1; batch_size = 50; poll_interval_ms = 200; max_attempts = 3;
          backoff = { initial_ms = 50; max_ms = 200; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "$1"; secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; output = "hook"; destination = "errors"; } );
CFG
}
relay_cfg "$GONE_URL"
"$OBX_BIN" init-db -c "$WH_DIR/relay.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'gone-' || g, 'order.created', '{}')) FROM generate_series(1, 20) g" >/dev/null
# long enough for max_attempts (3) failures at the backoff above, many times over
rc=0
timeout -s TERM 5 "$OBX_BIN" run -c "$WH_DIR/relay.cfg" >"$WH_DIR/relay-gone.log" 2>&1 || rc=$?
[ "$rc" -eq 124 ] || fail "relay run (unreachable) exited $rc before the timeout"
grep -q "unavailable: curl 7" "$WH_DIR/relay-gone.log" || fail "no outage in the log"
expect_eq "rows dead or with attempts while unreachable" \
    "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL OR attempts > 0 OR published_at IS NOT NULL")" 0
relay_cfg "$WH_URL"
"$OBX_BIN" run -c "$WH_DIR/relay.cfg" --drain >"$WH_DIR/relay.log" 2>&1 || fail "relay run"
wh_stop
expect_eq "published once reachable" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 20
echo "PASS webhook_unreachable"
