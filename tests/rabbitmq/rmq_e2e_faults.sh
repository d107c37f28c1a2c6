#!/bin/bash
# Through the relay, against a PRIVATE RabbitMQ: stop and restart the broker
# once a fifth of the events is published, force-close all connections three
# times at three fifths. The run drains by itself: every event published
# (none dead, none lost), duplicates counted and printed. The later events
# are held (available_at 'infinity') until each fault is over, so every fault
# lands with work left however fast the machine.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_start
N=${RMQ_FAULT_EVENTS:-20000}
Q=$(rmq_queue e2e_faults)
fresh_db rmq_e2e_faults
write_relay_cfg "$WORK/relay.cfg" "$PRIV_URL" "$Q" "declare_queue = \"$Q\"; heartbeat_s = 5;"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue_events "$N" 200
# held: phase B (the third and fourth fifths) and phase C (the last fifth)
B0=$(nth_id $((2 * N / 5))) C0=$(nth_id $((4 * N / 5)))
hold_from "$B0"

published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }
wait_published() { # wait until at least $1 rows are published
    local i
    for ((i = 0; i < 3000; i++)); do [ "$(published)" -ge "$1" ] && return 0; sleep 0.1; done
    fail "the relay did not reach $1 published rows"
}

timeout 500 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" &
relay=$!
wait_published $((N / 5))
note "broker stop at $(published)/$N published"
priv rmq-stop
sleep 3
priv rmq-start
note "broker back"
release_from "$B0" "$C0"

wait_published $((3 * N / 5))
for i in 1 2 3; do note "close_all_connections at $(published)/$N"; priv rmq-drop-conns; sleep 0.5; done
release_from "$C0"

wait $relay || { tail -30 "$WORK/relay.log" >&2; fail "relay run --drain failed"; }
expect_eq "published rows" "$(published)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
retried=$(sql "SELECT count(*) FROM outbox WHERE attempts > 1")
note "rows retried: $retried; reconnects logged: $(grep -c 'connected to' "$WORK/relay.log")"
grep -q "reconnecting" "$WORK/relay.log" || fail "no reconnect logged"
r=$("$RCONSUME" "$PRIV_URL" read "$Q" "$N" 10000 --header-n seq "") || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
echo "PASS rmq_e2e_faults ($N events, duplicates $(field duplicates "$r"))"
