#!/bin/bash
# Routing rules through RabbitMQ (SOURCE_MODE=wal: the same in WAL mode):
# routes that match header values, explicit drop routes, strict mode.
#   1. headers tenant = "internal"            drop
#   2. order.* with headers region = "eu-*"   queue EU
#   3. debug.*                                drop
#   4. order.*                                queue OTHER
#   (no catch-all: anything else is dead-lettered, as without these features)
# Enqueued: 100 eu orders, 100 us orders, 30 eu orders of tenant internal, 50
# debug events, 10 misc events. Counted on the broker side: EU holds exactly
# the 100 eu orders and OTHER the 100 us orders (in order per aggregate, no
# unknown event); the 10 misc events are dead with a readable reason; the 80
# dropped ones reached no queue, are not dead, and are counted per route in
# outbox_relay_route_dropped_total (30 on route 1, 50 on route 3). Poll mode:
# every row is done (dropped rows marked like published ones), none pending.
. "$(dirname "$0")/mode_lib.sh" routing
RCONSUME=${RCONSUME:?RCONSUME must name the rconsume helper}

X=obx_routing_x
Q_EU=obx_routing_eu_${MODE}_$$
Q_OTHER=obx_routing_other_${MODE}_$$
eng_extra_cleanup() {
    "$RCONSUME" "$AMQP_URL" delete "$Q_EU" >/dev/null 2>&1 || true
    "$RCONSUME" "$AMQP_URL" delete "$Q_OTHER" >/dev/null 2>&1 || true
    if [ "$MODE" = wal ] && [ -n "${TEST_DB:-}" ]; then wal_drop_slots "$TEST_DB" || true; fi
}
"$RCONSUME" "$AMQP_URL" declare "$Q_EU" "$X" "r.$Q_EU" || fail "declare $Q_EU"
"$RCONSUME" "$AMQP_URL" declare "$Q_OTHER" "$X" "r.$Q_OTHER" || fail "declare $Q_OTHER"

mode_db routing
CFG=$WORK/relay.cfg
cat >"$CFG" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 50;
          max_attempts = 1; $SOURCE };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "rabbit"; driver = "rabbitmq"; options = { url = "$AMQP_URL"; declare_exchange = "$X"; }; } );
routes = ( { headers = { tenant = "internal"; }; drop = true; },
           { event_type = "order.*"; headers = { region = "eu-*"; }; output = "rabbit"; destination = "$X/r.$Q_EU"; },
           { event_type = "debug.*"; drop = true; },
           { event_type = "order.*"; output = "rabbit"; destination = "$X/r.$Q_OTHER"; } );
EOF
init_db "$CFG"
start_relay "$CFG" "$WORK/relay.log"

# enqueue N TYPE AGG_PREFIX HEADERS_SQL: N events over 10 aggregates of their own, payload {"n": n}
enqueue() {
    sql "SELECT count(outbox_enqueue('Order', '$3-' || (g % 10), '$2', jsonb_build_object('n', g), $4))
         FROM generate_series(1, $1) g" >/dev/null
}
enqueue 100 order.created eu "jsonb_build_object('region', 'eu-' || CASE WHEN g % 2 = 0 THEN 'west' ELSE 'north' END)"
enqueue 100 order.created us "jsonb_build_object('region', 'us-east', 'tier', 'eu-gold')"
enqueue 30 order.created internal "jsonb_build_object('region', 'eu-west', 'tenant', 'internal')"
enqueue 50 debug.trace dbg "NULL"
enqueue 10 misc.thing misc "jsonb_build_object('region', 'eu-west')"

r=$("$RCONSUME" "$AMQP_URL" read "$Q_EU" 100 10000 --ids "$WORK/eu.ids") || { echo "$r"; fail "queue EU: consumer checks failed"; }
echo "EU: $r"
r=$("$RCONSUME" "$AMQP_URL" read "$Q_OTHER" 100 10000 --ids "$WORK/other.ids") || { echo "$r"; fail "queue OTHER: consumer checks failed"; }
echo "OTHER: $r"
sql "CREATE TABLE got (q text, event_id uuid)" >/dev/null
sed 's/^/eu,/' "$WORK/eu.ids" | sql "COPY got FROM STDIN (FORMAT csv)"
sed 's/^/other,/' "$WORK/other.ids" | sql "COPY got FROM STDIN (FORMAT csv)"
expect_eq "EU holds the eu orders of no internal tenant, only them" \
    "$(sql "SELECT count(DISTINCT g.event_id) FILTER (WHERE o.aggregate_id LIKE 'eu-%'),
                   count(*) FILTER (WHERE o.aggregate_id IS NULL OR o.aggregate_id NOT LIKE 'eu-%')
            FROM got g LEFT JOIN outbox o USING (event_id) WHERE g.q = 'eu'")" "100|0"
expect_eq "OTHER holds the us orders, only them" \
    "$(sql "SELECT count(DISTINCT g.event_id) FILTER (WHERE o.aggregate_id LIKE 'us-%'),
                   count(*) FILTER (WHERE o.aggregate_id IS NULL OR o.aggregate_id NOT LIKE 'us-%')
            FROM got g LEFT JOIN outbox o USING (event_id) WHERE g.q = 'other'")" "100|0"

if [ "$MODE" = wal ]; then
    DEAD="SELECT count(*) FROM outbox_dead_letter"
    wait_sql "$DEAD" 10 60
    expect_eq "dead letters: the misc events, no route" \
        "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE event_type = 'misc.thing' AND dl_error LIKE 'no route matches%'")" 10
else
    wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 60
    expect_eq "dead rows: the misc events, no route" \
        "$(sql "SELECT count(*) FILTER (WHERE event_type = 'misc.thing' AND last_error LIKE 'no route matches%'), count(*)
                FROM outbox WHERE dead_at IS NOT NULL")" "10|10"
    expect_eq "dropped rows marked done, no attempt counted against them" \
        "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL
                  AND (aggregate_id LIKE 'internal-%' OR event_type = 'debug.trace') AND last_error IS NULL")" 80
fi
# the relay may still be deciding the last ones: the counters settle with the rows
for ((i = 0; i < 100; i++)); do
    scrape "$WORK/metrics.txt"
    [ "$(value "$WORK/metrics.txt" 'outbox_relay_route_dropped_total{route="3",output=""}')" = 50 ] &&
        [ "$(value "$WORK/metrics.txt" 'outbox_relay_route_dropped_total{route="1",output=""}')" = 30 ] && break
    sleep 0.1
done
expect_eq "dropped on route 1 (tenant internal)" "$(value "$WORK/metrics.txt" 'outbox_relay_route_dropped_total{route="1",output=""}')" 30
expect_eq "dropped on route 3 (debug.*)" "$(value "$WORK/metrics.txt" 'outbox_relay_route_dropped_total{route="3",output=""}')" 50
expect_eq "published on route 2 (eu)" "$(value "$WORK/metrics.txt" 'outbox_relay_route_published_total{route="2",output="rabbit"}')" 100
expect_eq "dropped on route 2" "$(value "$WORK/metrics.txt" 'outbox_relay_route_dropped_total{route="2",output="rabbit"}')" 0
expect_eq "dead-lettered on the drop routes" \
    "$(value "$WORK/metrics.txt" 'outbox_relay_route_dead_lettered_total{route="1",output=""}')" 0
stop_relay "$RELAY_PID" 30
echo "PASS routing ($MODE: 100 + 100 routed by header, 80 dropped, 10 dead)"
