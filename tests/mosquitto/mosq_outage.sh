#!/bin/bash
# A broker outage through driver = "mosquitto" costs no attempt, as with the
# mqtt driver (tests/mqtt/mqtt_outage.sh): a private Mosquitto is stopped for
# longer than max_attempts x backoff while the relay publishes, then started
# again. The output is paused and probed meanwhile; afterwards every event is
# published with attempts = 1, none dead, the subscriber (a persistent
# session on a broker that keeps it on disk) gets every event, each
# aggregate in order, and the log says once per outage that the output went
# down and came back, and that the driver saw the connection drop and
# reconnected.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mosq_lib.sh"

N=6000
AGGS=500
mq_private mosq_outage "" true
fresh_db mosq_outage
CFG=$PMQ_DIR/relay.cfg
mosq_relay_cfg "$CFG" "$PMQ_URL" obx/mosq_outage "max_attempts = 2;" "reconnect_max_ms = 200;"
sed -i 's/initial_ms = 100; max_ms = 1000;/initial_ms = 20; max_ms = 40;/' "$CFG"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $AGGS), 'order.created',
         jsonb_build_object('n', g), jsonb_build_object('tenant', 'acme')))
     FROM generate_series(1, $N) g" >/dev/null

msub_start mosq_outage "$PMQ_URL" 'obx/mosq_outage/#' "$N" -P -H tenant=acme -T 300 -l 3000 -o "$PMQ_DIR/received.ids"
"$OBX_BIN" run -c "$CFG" --drain >"$PMQ_DIR/relay.log" 2>&1 &
RELAY_PID=$!
MQ_BG_PIDS="$MQ_BG_PIDS $RELAY_PID"

published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }
for _ in $(seq 600); do [ "$(published)" -ge $((N / 5)) ] && break; sleep 0.1; done
before=$(published)
[ "$before" -lt "$N" ] || fail "relay finished before the broker could be stopped"
note "stopping mosquitto after $before of $N published"
bash -c "$PMQ_STOP" || fail "mosquitto stop"
for _ in $(seq 300); do grep -q "output mq unavailable" "$PMQ_DIR/relay.log" && break; sleep 0.1; done
grep -q "output mq unavailable" "$PMQ_DIR/relay.log" || fail "the relay never paused the output"
sleep 3 # 2 attempts x 40 ms backoff many times over
during=$(published)
expect_eq "dead rows while the broker is down" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
note "starting mosquitto again ($during published while it was down)"
bash -c "$PMQ_START" || fail "mosquitto start"

rc=0
wait "$RELAY_PID" || rc=$?
[ "$rc" -eq 0 ] || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain exited $rc"; }
msub_wait

expect_eq "published rows" "$(published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "rows with attempts other than 1" "$(sql "SELECT count(*) FROM outbox WHERE attempts <> 1")" 0
grep -qE "output mq is back after [0-9]+\.[0-9] s down$" "$PMQ_DIR/relay.log" || fail "no 'is back' line"
downs=$(grep -c "output mq unavailable" "$PMQ_DIR/relay.log")
backs=$(grep -c "output mq is back after" "$PMQ_DIR/relay.log")
expect_eq "down lines match back lines" "$downs" "$backs"
grep -q "connection lost\|server sent DISCONNECT" "$PMQ_DIR/relay.log" || fail "the driver never saw the connection drop"
grep -q "after [0-9]* attempt" "$PMQ_DIR/relay.log" || fail "the driver never reconnected"
echo "outage: $N published, $(msub_field unique) received, $(msub_field duplicates) duplicates," \
     "$downs outage(s) logged, deferred $(sed -n 's/.*deferred \([0-9]*\).*/\1/p' "$PMQ_DIR/relay.log")"
echo "PASS mosq_outage"
