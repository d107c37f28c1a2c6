#!/bin/bash
# A hung cluster under the relay: E2E_EVENTS events into a private mock that
# is stopped (SIGSTOP: connections stay open, nothing answers) for HANG_S
# (60) seconds mid-run, then continued. With max_attempts = 2 and a 3 s
# message timeout, every timeout would dead-letter an event if it counted an
# attempt: nothing may be dead, every row ends published with attempts = 1,
# and the consumer finds every event (duplicates counted and printed).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/klib.sh"

events=${E2E_EVENTS:-3000}
hang=${HANG_S:-60}
topic=kt.hang
kmock_start "$topic:6"
fresh_db kt_e2e_hang
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 2 3000
sed -i 's/max_attempts = 1000;/max_attempts = 2;/; s/initial_ms = 100; max_ms = 2000;/initial_ms = 50; max_ms = 100;/' "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 500), 'order.created',
             jsonb_build_object('n', g), jsonb_build_object('seq', g::text)))
         FROM generate_series($1, $2) g" >/dev/null
}
half=$((events / 2))
enqueue 1 "$half"
published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }
dead() { sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL"; }

"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$events" -i $(((hang + 120) * 1000)) -k -h seq \
    > "$WORK/got" 2> "$WORK/consumer.err" &
consumer=$!
timeout $((hang + 600)) "$OBX_BIN" run -c "$WORK/relay.cfg" 2> "$WORK/relay.log" &
relay=$!

for ((i = 0; i < 1500; i++)); do [ "$(published)" -ge "$half" ] && break; sleep 0.2; done
kill -STOP "$KM_PID"
note "brokers HUNG with $(published)/$events published"
enqueue $((half + 1)) "$events"
sql "SELECT event_id FROM outbox" > "$WORK/ids"
sleep "$hang"
during=$(published)
kill -CONT "$KM_PID"
note "brokers answer again after $hang s with $during/$events published, $(dead) dead"
t_up=$SECONDS
for ((i = 0; i < 3000; i++)); do [ "$(published)" -ge "$events" ] && break; sleep 0.2; done
kill -TERM "$relay"
wait "$relay" || { tail -30 "$WORK/relay.log" >&2; fail "relay did not stop cleanly"; }
note "relay caught up $((SECONDS - t_up)) s after the brokers answered; $(tail -1 "$WORK/relay.log")"
wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
expect_eq "dead rows" "$(dead)" 0
expect_eq "published rows" "$(published)" "$events"
expect_eq "rows with attempts other than 1" "$(sql "SELECT count(*) FROM outbox WHERE attempts <> 1")" 0
grep -q "output kafka unavailable" "$WORK/relay.log" || fail "the relay never paused the output"
check_delivery "$WORK/ids" "$WORK/got"
echo "PASS kafka_e2e_hang ($events events, hung $hang s, $DUPS duplicates)"
