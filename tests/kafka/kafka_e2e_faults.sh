#!/bin/bash
# Brokers down mid-run: the relay publishes E2E_EVENTS events into a private
# mock cluster whose brokers go down (SIGUSR1) for at least 8 s, and until a
# delivery has failed (so the fault really hit messages in flight), and come
# back (SIGUSR2). The outage is longer than max_attempts (2) x backoff, yet it
# costs no attempt: the output is paused, nothing is dead-lettered, every row
# ends published with attempts = 1, the log says once that the output went
# down and once that it is back, and the topic holds every event (duplicates
# counted).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

events=${E2E_EVENTS:-3000}
topic=kt.faults
kmock_start "$topic:6"
fresh_db kt_e2e_faults
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 2 3000
sed -i 's/max_attempts = 1000;/max_attempts = 2;/; s/initial_ms = 100; max_ms = 2000;/initial_ms = 50; max_ms = 100;/' "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
# half the events before the fault, half while the brokers are down: the
# fault hits messages in flight however fast the relay is
enqueue() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 500), 'order.created',
             jsonb_build_object('n', g), jsonb_build_object('seq', g::text)))
         FROM generate_series($1, $2) g" >/dev/null
}
half=$((events / 2))
enqueue 1 "$half"
published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }

"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$events" -i 120000 -k -h seq > "$WORK/got" 2> "$WORK/consumer.err" &
consumer=$!
timeout 900 "$OBX_BIN" run -c "$WORK/relay.cfg" 2> "$WORK/relay.log" &
relay=$!

for ((i = 0; i < 1500; i++)); do [ "$(published)" -ge "$half" ] && break; sleep 0.2; done
before=$(published)
kill -USR1 "$KM_PID"
note "brokers DOWN with $before/$events published"
enqueue $((half + 1)) "$events"
sql "SELECT event_id FROM outbox" > "$WORK/ids"
t_down=$SECONDS
# a deferred row keeps why it waited (no attempt counted)
failed() { sql "SELECT count(*) FROM outbox WHERE last_error IS NOT NULL"; }
while [ $((SECONDS - t_down)) -lt 8 ] || [ "$(failed)" = 0 ]; do
    [ $((SECONDS - t_down)) -lt 180 ] || { kill -USR2 "$KM_PID"; fail "no delivery failed in 180 s with the brokers down"; }
    sleep 0.5
done
during=$(published)
kill -USR2 "$KM_PID"
note "brokers UP after $((SECONDS - t_down)) s with $during/$events published, $(failed) rows deferred"
expect_eq "dead rows while the brokers were down" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
t_up=$SECONDS
for ((i = 0; i < 3000; i++)); do [ "$(published)" -ge "$events" ] && break; sleep 0.2; done
kill -TERM "$relay"
wait "$relay" || { tail -30 "$WORK/relay.log" >&2; fail "relay did not stop cleanly"; }
note "relay caught up $((SECONDS - t_up)) s after the brokers came back; $(tail -1 "$WORK/relay.log")"

wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
expect_eq "published rows" "$(published)" "$events"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "rows with attempts other than 1" "$(sql "SELECT count(*) FROM outbox WHERE attempts <> 1")" 0
grep -q "output kafka unavailable" "$WORK/relay.log" || fail "the relay never paused the output"
expect_eq "outages logged as down / back" \
    "$(grep -c "output kafka unavailable" "$WORK/relay.log") / $(grep -c "output kafka is back" "$WORK/relay.log")" "1 / 1"
check_delivery "$WORK/ids" "$WORK/got"
# each aggregate's first deliveries stay in id order (duplicates may repeat an older one)
awk -F'\t' '!seen[$4]++' "$WORK/got" > "$WORK/first"
check_order "$WORK/first" 5 3
echo "PASS kafka_e2e_faults ($events events, $(failed) deferred during the outage, $DUPS duplicates)"
