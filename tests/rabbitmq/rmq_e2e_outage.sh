#!/bin/bash
# A RabbitMQ outage costs no attempt. Through the relay, against a PRIVATE
# RabbitMQ stopped for longer than max_attempts (2) x backoff while events
# are pending: nothing is dead-lettered, every row ends published with
# attempts = 1, the log says once that the output went down and once that it
# is back, and the consumer gets every event (duplicates counted). The
# second half is held (available_at 'infinity') until the broker is down, so
# the outage lands with work left however fast the machine.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_start
N=${RMQ_OUTAGE_EVENTS:-4000}
Q=$(rmq_queue e2e_outage)
fresh_db rmq_e2e_outage
write_relay_cfg "$WORK/relay.cfg" "$PRIV_URL" "$Q" "declare_queue = \"$Q\";" 2
sed -i 's/initial_ms = 100; max_ms = 1000;/initial_ms = 20; max_ms = 40;/' "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue_events "$N" 200
B0=$(nth_id $((N / 2)))
hold_from "$B0"

published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }
timeout 500 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" &
relay=$!
for ((i = 0; i < 3000; i++)); do [ "$(published)" -ge $((N / 2)) ] && break; sleep 0.1; done
note "broker stop at $(published)/$N published"
priv rmq-stop
release_from "$B0"
for ((i = 0; i < 300; i++)); do grep -q "output rabbit unavailable" "$WORK/relay.log" && break; sleep 0.1; done
grep -q "output rabbit unavailable" "$WORK/relay.log" || fail "the relay never paused the output"
sleep 3 # 2 attempts x 40 ms backoff many times over
expect_eq "dead rows while the broker is down" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
priv rmq-start
note "broker back"

wait $relay || { tail -30 "$WORK/relay.log" >&2; fail "relay run --drain failed"; }
expect_eq "published rows" "$(published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "rows with attempts other than 1" "$(sql "SELECT count(*) FROM outbox WHERE attempts <> 1")" 0
expect_eq "outages logged as down / back" \
    "$(grep -c "output rabbit unavailable" "$WORK/relay.log") / $(grep -c "output rabbit is back" "$WORK/relay.log")" "1 / 1"
r=$("$RCONSUME" "$PRIV_URL" read "$Q" "$N" 10000 --header-n seq "") || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
echo "PASS rmq_e2e_outage ($N events, deferred $(sed -n 's/.*deferred \([0-9]*\).*/\1/p' "$WORK/relay.log"), duplicates $(field duplicates "$r"))"
