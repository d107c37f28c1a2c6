#!/bin/bash
# The relay end to end: E2E_EVENTS (default 100,000) events over 1000
# aggregates through `outbox-relay run --drain` into a durable queue bound to
# a topic exchange (both declared by the driver); rconsume reads every event
# back with its properties and headers, each aggregate in id order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
N=${E2E_EVENTS:-100000}
Q=$(rmq_queue e2e)
rmq_delete_at_exit "$Q"
# the exchange is shared by every run on the broker: the routing keys are this run's
X=obx_e2e_x
fresh_db rmq_e2e
write_relay_cfg "$WORK/relay.cfg" "$AMQP_URL" "$X/orders.$$.\${event_type}" \
    "declare_exchange = \"$X\"; declare_queue = \"$Q\"; bind_routing_key = \"orders.$$.#\";"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
t0=$SECONDS
enqueue_events "$N" 1000
note "enqueued $N events in $((SECONDS - t0)) s"

t0=$SECONDS
timeout 900 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
secs=$((SECONDS - t0))
note "relay drained $N events in $secs s ($((N / (secs > 0 ? secs : 1))) events/s)"
expect_eq "published rows" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0

r=$("$RCONSUME" "$AMQP_URL" read "$Q" "$N" 20000 --header-n seq "" --content-type application/json) \
    || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
expect_eq duplicates "$(field duplicates "$r")" 0
expect_eq aggregates "$(field aggregates "$r")" 1000
echo "PASS rmq_e2e ($N events in $secs s)"
