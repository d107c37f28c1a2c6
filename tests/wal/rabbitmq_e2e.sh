#!/bin/bash
# WAL mode end to end with RabbitMQ: 20,000 events over 1,000 aggregates (one
# in ten through outbox_emit) relayed by `run --drain` from the slot into a
# durable queue bound to a topic exchange; rconsume reads every event back
# with its properties and headers, each aggregate in order, no duplicates.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../rabbitmq/rmq_lib.sh"
. "$(dirname "$0")/walmode.sh"
N=${E2E_EVENTS:-20000}
Q=$(rmq_queue wal_e2e)
rmq_delete_at_exit "$Q"
# the exchange is shared by every run on the broker: the routing keys are this run's
X=obx_wal_e2e_x
fresh_wal_db rmq_wal
write_relay_cfg "$WORK/relay.cfg" "$AMQP_URL" "$X/orders.$$.\${event_type}" \
    "declare_exchange = \"$X\"; declare_queue = \"$Q\"; bind_routing_key = \"orders.$$.#\";"
to_wal_mode "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
enqueue_wal_mix "$N" 1000 "jsonb_build_object('seq', g::text)"
t0=$SECONDS
timeout 900 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
secs=$((SECONDS - t0))
r=$("$RCONSUME" "$AMQP_URL" read "$Q" "$N" 20000 --header-n seq "" --content-type application/json) \
    || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
expect_eq duplicates "$(field duplicates "$r")" 0
expect_eq aggregates "$(field aggregates "$r")" 1000
drop_wal_slots
echo "PASS wal rabbitmq_e2e ($N events in $secs s)"
