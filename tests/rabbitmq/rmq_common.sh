# Shared by the RabbitMQ tests: source after tests/lib.sh.
RCONSUME=${RCONSUME:?RCONSUME must name the rconsume helper}
RMQ_HARNESS=${RMQ_HARNESS:?RMQ_HARNESS must name the rmq_harness helper}
OBX_DRIVERS=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}
RMQ_SO=$OBX_DRIVERS/rabbitmq.so
[ -f "$RMQ_SO" ] || fail "driver not built: $RMQ_SO"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/obx-rmq-test.XXXXXX)
chmod 755 "$WORK"

# A queue name unique to this run, so runs never see each other's messages.
rmq_queue() { echo "obx_$1_$$"; }

# harness OPTIONS... -- ARGS...: run the driver through the fake host.
harness() {
    local o=() a
    while [ $# -gt 0 ] && [ "$1" != -- ]; do o+=(-o "$1"); shift; done
    shift
    "$RMQ_HARNESS" "$RMQ_SO" "${o[@]}" "$@"
}

# field NAME LINE: value of NAME=... in a summary line
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

# Private RabbitMQ for fault tests (the shared one must never be stopped).
PRIV_ENV=(SVC_DIR=/tmp/obx-rmqfault-$$ AMQP_PORT=${PRIV_AMQP_PORT:-57720} RMQ_DIST_PORT=57721
          RMQ_CTL_PORT_MIN=57722 RMQ_EPMD_PORT=57730)
priv() { env "${PRIV_ENV[@]}" "$SERVICES" "$@"; }
priv_start() {
    note "starting a private RabbitMQ on 127.0.0.1:${PRIV_AMQP_PORT:-57720}"
    PRIV_URL=amqp://guest:guest@127.0.0.1:${PRIV_AMQP_PORT:-57720}
    trap 'priv stop >/dev/null 2>&1 || true; rm -rf /tmp/obx-rmqfault-$$ "$WORK"' EXIT
    priv rmq-start
}
