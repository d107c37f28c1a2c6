#!/bin/bash
# The conformance runner (check-driver) against the RabbitMQ driver and the
# shared broker, plus create refusing a non-AMQP url.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
CFG=$HERE/rabbitmq.cfg
"$RCONSUME" "$AMQP_URL" declare obx_conformance

out=$("$OBX_BIN" check-driver "$RMQ_SO" -c "$CFG" -o main --bad-output bad --destination obx_conformance 2>"$WORK/err") \
    || { echo "$out"; cat "$WORK/err" >&2; fail "check-driver failed"; }
echo "$out"
grep -q "^PASS close_in_flight" <<<"$out" || fail "close_in_flight did not pass"

# a non-AMQP url is refused by create with a reason
out=$(harness url=http://127.0.0.1:1 -- create) && fail "create accepted an http:// url"
grep -q "amqp:// or amqps://" <<<"$out" || fail "unclear create refusal: $out"
out=$(harness url=amqp://guest:guest@127.0.0.1:1 tls_ca=/x.pem -- create) && fail "create accepted tls_ca without amqps"
"$RCONSUME" "$AMQP_URL" purge obx_conformance
echo "PASS rabbitmq conformance"
