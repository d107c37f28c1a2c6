#!/bin/bash
# The driver against a PRIVATE RabbitMQ that is stopped and restarted, then
# has its connections force-closed, while events flow: every event ends OK
# (none lost), the driver reconnects by itself, duplicates are counted.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_start
Q=$(rmq_queue faults)
N=${RMQ_FAULT_EVENTS:-40000}

run_with_fault() { # NAME FAULT-COMMAND...
    local name=$1; shift
    local q=${Q}_$name
    "$RCONSUME" "$PRIV_URL" declare "$q"
    harness url="$PRIV_URL" declare_queue="$q" heartbeat_ms=5000 connect_timeout_ms=2000 -- \
        publish "$N" 50 "$q" --deadline 240 --pause-at $((N / 10)) "$WORK/$name.paced" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    local pid=$!
    # once N/10 went out, the harness holds each batch in flight until the fault is over
    local tenths=0
    while [ ! -e "$WORK/$name.paced" ] && kill -0 $pid 2>/dev/null && [ $((tenths++)) -lt 600 ]; do sleep 0.1; done
    [ -e "$WORK/$name.paced" ] || fail "$name: the harness never reached N/10 (log: $(tail -3 "$WORK/$name.err"))"
    "$@"
    touch "$WORK/$name.paced.go"
    wait $pid || { cat "$WORK/$name.out"; tail -20 "$WORK/$name.err"; fail "$name: not every event ended OK"; }
    SUM=$(tail -1 "$WORK/$name.out")
    echo "$name: driver: $SUM"
    expect_eq "$name ok" "$(field ok "$SUM")" "$N"
    grep -q "reconnecting" "$WORK/$name.err" || fail "$name: no reconnect logged"
    local r
    r=$("$RCONSUME" "$PRIV_URL" read "$q" "$N" 10000 --header-n trace t-) || { echo "$r"; fail "$name: consumer check failed"; }
    echo "$name: consumer: $r"
}

restart() { note "rabbitmq stop"; priv rmq-stop; sleep 2; note "rabbitmq start"; priv rmq-start; }
run_with_fault restart restart
# a stopped broker fails what is in flight or refuses what comes while it is
# away (UNAVAILABLE); a closed connection may not (its acknowledgements can
# precede the close), so only the restart must show it
[ $(($(field retriable "$SUM") + $(field unavailable "$SUM"))) -gt 0 ] \
    || fail "restart: the fault did not hit any message"

drop() { local i; for i in 1 2 3; do note "close_all_connections"; priv rmq-drop-conns; sleep 0.7; done; }
run_with_fault drop drop
echo "PASS faults"
