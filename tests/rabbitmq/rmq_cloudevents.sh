#!/bin/bash
# CloudEvents on RabbitMQ (issue 30): one run, a binary-mode output and a
# structured-mode one into two queues; rconsume dumps every message with its
# properties and the CloudEvents SDK for JavaScript reads each (by the AMQP
# binding's cloudEvents_* names) and checks it against the rows enqueued.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"; for m in bin str; do "$RCONSUME" "$AMQP_URL" delete "$(rmq_queue "ce_$m")" >/dev/null 2>&1 || true; done' EXIT
. "$OBX_SRC/tests/cloudevents/ce_lib.sh"

# the exchange is shared by every run on the broker: the routing keys are this run's
X=obx_ce_x
for m in bin str; do
    "$RCONSUME" "$AMQP_URL" declare "$(rmq_queue "ce_$m")" "$X" "$m.$$.#" || fail "declare ce_$m"
done
fresh_db obx_ce_rabbitmq
ce_cfg "$WORK/relay.cfg" rabbitmq "url = \"$AMQP_URL\";" "$X/bin.$$.order" "$X/str.$$.order"
ce_run "$WORK/relay.cfg"
for m in bin str; do
    "$RCONSUME" "$AMQP_URL" dump "$(rmq_queue "ce_$m")" "$CE_N" 10000 > "$WORK/$m.json" ||
        fail "ce_$m: not every message arrived"
done
ce_check amqp binary "$WORK/bin.json"
ce_check amqp structured "$WORK/str.json"
echo "PASS rmq_cloudevents"
