#!/bin/bash
# A full queue through the relay is pushback, not the events' fault (issue
# 34: with x-max-length + reject-publish, every nack cost an attempt, so a
# consumer stopped for about 4 minutes made every pending event dead). A
# queue of 100 that refuses more, no consumer, 1,000 events, max_attempts = 2
# and a backoff of 100 ms to 1 s. Held full for 30 s: the previous driver
# dead-letters each event at its second nack, about a second after it is
# first offered, so 30 s (dozens of offers of every event) shows what 5
# minutes would: nothing is dead, 100 are published. Then, the relay stopped,
# a consumer starts, the relay drains the rest: every event delivered, first
# deliveries in order, none dead. A queue that refuses can take an event's
# successor sent right behind it once a consumer makes room in between: the
# output says one_per_aggregate = true, so none is ever sent behind one
# unanswered (with runs, a CI run saw 73 events first delivered after a
# later one of their aggregate while the drain refilled the queue).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
FULL_S=30
N=1000
Q=$(rmq_queue e2e_nack)
rmq_delete_at_exit "$Q"
"$RCONSUME" "$AMQP_URL" declare-bounded "$Q" 100
fresh_db rmq_e2e_nack
write_relay_cfg "$WORK/relay.cfg" "$AMQP_URL" "$Q" "" 2
sed -i 's/driver = "rabbitmq";/driver = "rabbitmq"; one_per_aggregate = true;/' "$WORK/relay.cfg"
grep -q one_per_aggregate "$WORK/relay.cfg" || fail "relay.cfg lacks one_per_aggregate"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue_events $N 7

"$OBX_BIN" run -c "$WORK/relay.cfg" 2>"$WORK/relay.log" &
RELAY=$!
sleep $FULL_S
DEAD=$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")
FULL=$(published_count)
kill -TERM "$RELAY"
wait "$RELAY" || { tail -30 "$WORK/relay.log" >&2; fail "the relay exited non-zero"; }
echo "after ${FULL_S}s full: published $FULL, dead $DEAD, attempts charged $(sql "SELECT coalesce(sum(attempts), 0) FROM outbox WHERE published_at IS NULL")"
expect_eq "dead rows while the queue was full" "$DEAD" 0
expect_eq "published while the queue was full" "$FULL" 100

"$RCONSUME" "$AMQP_URL" read "$Q" $N 10000 --header-n seq "" --pace-us 1000 >"$WORK/consumer" &
consumer=$!
sleep 1
timeout 120 "$OBX_BIN" run --drain -c "$WORK/relay.cfg" 2>>"$WORK/relay.log" \
    || { tail -20 "$WORK/relay.log" >&2; fail "the relay did not drain"; }
wait $consumer || { cat "$WORK/consumer"; fail "consumer checks failed"; }
r=$(cat "$WORK/consumer")
echo "$r"
expect_eq "published rows" "$(published_count)" $N
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "warnings that a refused run may be overtaken (no runs sent)" \
    "$(grep -c 'refused a message (nack) with later ones' "$WORK/relay.log" || true)" 0
echo "PASS rmq_e2e_nack (full ${FULL_S}s: dead 0; all $N delivered, duplicates $(field duplicates "$r"), reconnects $(grep -c reconnecting "$WORK/relay.log" || true))"
