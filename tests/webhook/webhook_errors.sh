#!/bin/bash
# A receiver slower than timeout_ms gets the event again (a timeout is
# retriable and counts an attempt), and it is published once answered in
# time. A receiver that answers 200 and then never finishes the body has the
# event: each such event is requested once and published, none dead (the
# driver cuts the body WH_BODY_GRACE_MS after the headers). A receiver nobody
# listens on is OBX_UNAVAILABLE, not an attempt: wh_status checks the
# driver's side of that, webhook_unreachable the engine's.
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
sql "SELECT count(outbox_enqueue('Order', 'slow-' || g, CASE WHEN g <= 3 THEN 'order.fail.slow' WHEN g <= 8 THEN 'order.stall.body' ELSE 'order.created' END,
         '{}')) FROM generate_series(1, 20) g" >/dev/null
t0=$(date +%s%N)
"$OBX_BIN" run -c "$WH_DIR/relay.cfg" --drain >"$WH_DIR/relay-slow.log" 2>&1 || fail "relay run (slow)"
t1=$(date +%s%N)
wh_stop
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "stalled-body events requested" \
    "$(awk -F'\t' '$5 == "order.stall.body" && $3 == 200 { n[$4]++ } END { print length(n) }' "$WH_REC")" 5
expect_eq "requests per stalled-body event" \
    "$(awk -F'\t' '$5 == "order.stall.body" { n[$4]++ } END { for (e in n) print n[e] }' "$WH_REC" | sort -u)" 1
note "20 events (3 slow, 5 with a stalled body) drained in $(((t1 - t0) / 1000000)) ms"
expect_eq "slow: published" "$(sql "SELECT count(*) FROM outbox WHERE aggregate_id LIKE 'slow-%' AND published_at IS NOT NULL")" 20
expect_eq "slow: requests per slow event" \
    "$(awk -F'\t' '$5 == "order.fail.slow" { n[$4]++ } END { for (e in n) print n[e] }' "$WH_REC" | sort -u)" 2
echo "PASS webhook_errors"
