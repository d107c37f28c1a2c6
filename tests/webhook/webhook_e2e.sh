#!/bin/bash
# End to end: 2,000 events enqueued in PostgreSQL, relayed by `outbox-relay
# run --drain` to whserver. Some event types make the server answer 400
# (dead-lettered, at the latest on the third attempt), 500 twice then 200 (retried by the engine), or 429
# with Retry-After: 1 (held by the driver, re-sent no sooner). The server's
# records are loaded into the test database and joined with the outbox.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

N=${WEBHOOK_E2E_EVENTS:-2000}
AGGS=200
wh_server e2e
fresh_db webhook_e2e
CFG=$WH_DIR/relay.cfg
cat >"$CFG" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 200; ordering = "aggregate"; poll_interval_ms = 200; max_attempts = 5;
          backoff = { initial_ms = 50; max_ms = 400; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "\${WH_URL}/hooks"; append_destination = true; max_in_flight = 16;
                          timeout_ms = 5000; secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "hook"; destination = "orders.\${aggregate_type}"; } );
CFG
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"

# disjoint failure sets: 101, 103 and 251 have no common multiple below 2,000
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS),
         CASE WHEN g % 101 = 0 THEN 'order.fail.400' WHEN g % 103 = 0 THEN 'order.fail.500'
              WHEN g % 251 = 0 THEN 'order.fail.429' ELSE 'order.created' END,
         jsonb_build_object('n', g, 'pad', repeat('x', 150), 'text', 'caf\u00e9 \"q\"'),
         jsonb_build_object('tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null
N400=$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.fail.400'")
N500=$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.fail.500'")
N429=$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.fail.429'")

t0=$(date +%s%N)
"$OBX_BIN" run -c "$CFG" --drain >"$WH_DIR/relay.log" 2>&1 || { tail -20 "$WH_DIR/relay.log"; fail "relay run --drain failed"; }
t1=$(date +%s%N)
wh_stop

sql "CREATE TABLE rec (seq bigint, ms bigint, status int, event_id text, event_type text, aggregate_type text,
         aggregate_id text, created_at text, destination text, path text, tenant text, content_type text,
         sig_ok int, nth int, body_md5 text)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy rec FROM '$WH_REC'" || fail "loading the records"
q() { sql "$1"; }

expect_eq "published rows" "$(q "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$((N - N400))"
expect_eq "dead rows" "$(q "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" "$N400"
expect_eq "dead rows without the status and body in last_error" \
    "$(q "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL
          AND NOT (last_error LIKE '%HTTP 400%' AND last_error LIKE '%is refused%')")" 0
expect_eq "dead rows that are not the 400 events" \
    "$(q "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL AND event_type <> 'order.fail.400'")" 0
expect_eq "requests with a bad signature" "$(q "SELECT count(*) FROM rec WHERE sig_ok <> 1")" 0
expect_eq "events answered 200 more than once (duplicates)" \
    "$(q "SELECT count(*) FROM (SELECT event_id FROM rec WHERE status = 200 GROUP BY 1 HAVING count(*) > 1) d")" 0
expect_eq "published events the server never answered 200" \
    "$(q "SELECT count(*) FROM outbox o WHERE published_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM rec r WHERE r.event_id = o.event_id::text AND r.status = 200)")" 0
expect_eq "deliveries whose headers or body differ from the row" \
    "$(q "SELECT count(*) FROM rec r JOIN outbox o ON o.event_id::text = r.event_id WHERE r.status = 200
          AND (r.event_type, r.aggregate_type, r.aggregate_id, r.destination, r.path, r.tenant, r.content_type,
               r.body_md5, r.created_at::timestamptz)
          IS DISTINCT FROM (o.event_type, o.aggregate_type, o.aggregate_id, 'orders.Order', '/hooks/orders.Order',
               'acme', 'application/json', md5(o.payload::text), o.created_at)")" 0
expect_eq "aggregates delivered out of id order" \
    "$(q "SELECT count(*) FROM (SELECT o.id < lag(o.id) OVER (PARTITION BY o.aggregate_id ORDER BY r.seq) AS back
          FROM rec r JOIN outbox o ON o.event_id::text = r.event_id WHERE r.status = 200) x WHERE back")" 0
# a 400 is final once something sent as late was taken, else on the third
# attempt (the circuit breaker, core/host/health.h): sent 1 to 3 times
expect_eq "400 events sent more than 3 times" \
    "$(q "SELECT count(*) FROM (SELECT event_id FROM rec WHERE event_type = 'order.fail.400' GROUP BY 1
          HAVING count(*) NOT BETWEEN 1 AND 3) x")" 0
expect_eq "500 events not sent exactly 3 times (500, 500, 200)" \
    "$(q "SELECT count(*) FROM (SELECT event_id FROM rec WHERE event_type = 'order.fail.500' GROUP BY 1
          HAVING array_agg(status ORDER BY seq) <> '{500,500,200}') x")" 0
expect_eq "500 events received" "$(q "SELECT count(DISTINCT event_id) FROM rec WHERE event_type = 'order.fail.500'")" "$N500"
expect_eq "429 events not answered 429 then 200" \
    "$(q "SELECT count(*) FROM (SELECT event_id FROM rec WHERE event_type = 'order.fail.429' GROUP BY 1
          HAVING array_agg(status ORDER BY seq) <> '{429,200}') x")" 0
expect_eq "429 events received" "$(q "SELECT count(DISTINCT event_id) FROM rec WHERE event_type = 'order.fail.429'")" "$N429"
# Retry-After: 1 is a lower bound: the re-send may come later, never sooner
early=$(q "SELECT coalesce(string_agg(event_id || ' after ' || gap || ' ms', ', '), '') FROM (
           SELECT event_id, ms - lag(ms) OVER (PARTITION BY event_id ORDER BY seq) AS gap
           FROM rec WHERE event_type = 'order.fail.429') x WHERE gap < 1000")
expect_eq "429 events re-sent before Retry-After passed" "$early" ""
gaps=$(q "SELECT min(gap) || '..' || max(gap) FROM (SELECT ms - lag(ms) OVER (PARTITION BY event_id ORDER BY seq) AS gap
          FROM rec WHERE event_type = 'order.fail.429') x WHERE gap IS NOT NULL")
ms=$(((t1 - t0) / 1000000))
echo "relayed $N events ($N400 dead-lettered 400, $N500 retried after 500, $N429 held after 429, re-sent after $gaps ms)" \
     "in $ms ms; $(q "SELECT count(*) FROM rec") requests"
echo "PASS webhook_e2e"
