#!/bin/bash
# A receiver's reply that is not UTF-8 cannot hold a batch (issue 11: the
# error text made the record statement fail, the whole batch was published
# again every lease period, forever). One claim of 10 events of 10
# aggregates; the receiver answers one of them 400 with a Latin-1 body. That
# row is dead-lettered after one attempt with a readable error (the body's
# invalid bytes replaced by U+FFFD, its line break by a space); the other 9 are published, and the
# receiver got each of the 10 exactly once.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server latin1
fresh_db webhook_latin1
cat >"$WH_DIR/relay.cfg" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 1; batch_size = 10; poll_interval_ms = 200; max_attempts = 3;
          backoff = { initial_ms = 50; max_ms = 200; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "$WH_URL"; timeout_ms = 3000; secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; output = "hook"; destination = "latin1"; } );
CFG
"$OBX_BIN" init-db -c "$WH_DIR/relay.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || g, CASE WHEN g = 5 THEN 'order.fail.latin1' ELSE 'order.created' END,
         jsonb_build_object('n', g))) FROM generate_series(1, 10) g" >/dev/null
timeout 120 "$OBX_BIN" run -c "$WH_DIR/relay.cfg" --drain >"$WH_DIR/relay.log" 2>&1 || fail "relay run failed or did not drain in 120 s: $(tail -5 "$WH_DIR/relay.log")"
wh_stop

BAD="FROM outbox WHERE event_type = 'order.fail.latin1'"
note "last_error: $(sql "SELECT last_error $BAD")"
expect_eq "Latin-1 reply: dead after one attempt" "$(sql "SELECT (dead_at IS NOT NULL AND published_at IS NULL) || '/' || attempts $BAD")" "true/1"
expect_eq "Latin-1 reply: readable last_error, invalid bytes replaced" \
    "$(sql "SELECT last_error = 'HTTP 400: r' || U&'\FFFD' || 'ponse refus' || U&'\FFFD' || 'e: ' || U&'\FFFD' || 'caf'
            || U&'\FFFD' || ' cr' || U&'\FFFD' || 'me' || U&'\FFFD' || '  (code 400)' $BAD")" t
expect_eq "other events: published after one attempt" \
    "$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.created' AND published_at IS NOT NULL AND attempts = 1")" 9
expect_eq "requests per event" "$(awk -F'\t' '{ n[$4]++ } END { for (e in n) print n[e] }' "$WH_REC" | sort -u)" 1
expect_eq "requests: 200s/400s" \
    "$(awk -F'\t' '$3 == 200 { ok++ } $3 == 400 { bad++ } END { print ok "/" bad }' "$WH_REC")" "9/1"
expect_eq "claimed" "$(sed -n 's/.*relay stopped: claimed \([0-9]*\),.*/\1/p' "$WH_DIR/relay.log")" 10
echo "PASS webhook_latin1"
