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
# rmq_delete_at_exit QUEUE: at exit, the test's queue leaves the shared broker
# (one left bound to an exchange takes a copy of every later run's events),
# and the work directory goes.
rmq_delete_at_exit() {
    RMQ_EXIT_QUEUE=$1
    trap '"$RCONSUME" "$AMQP_URL" delete "$RMQ_EXIT_QUEUE" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
}

# harness OPTIONS... -- ARGS...: run the driver through the fake host.
harness() {
    local o=() a
    while [ $# -gt 0 ] && [ "$1" != -- ]; do o+=(-o "$1"); shift; done
    shift
    "$RMQ_HARNESS" "$RMQ_SO" "${o[@]}" "$@"
}

# field NAME LINE: value of NAME=... in a summary line
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

# Private RabbitMQ for fault tests (the shared one must never be stopped), on
# 11 ports of the test's own from free_ports (tests/lib.sh): AMQP, then
# distribution, 8 for rabbitmqctl, epmd (PRIV_AMQP_PORT chooses the block).
PRIV_BASE=${PRIV_AMQP_PORT:-$(free_ports 11)}
PRIV_ENV=(SVC_DIR=/tmp/obx-rmqfault-$$ AMQP_PORT=$PRIV_BASE RMQ_DIST_PORT=$((PRIV_BASE + 1))
          RMQ_CTL_PORT_MIN=$((PRIV_BASE + 2)) RMQ_EPMD_PORT=$((PRIV_BASE + 10)))
priv() { env "${PRIV_ENV[@]}" "$SERVICES" "$@"; }
# priv_make_conf LINE...: the private broker's rabbitmq.conf with these lines
# (before priv_start: services.sh keeps an existing directory)
priv_make_conf() {
    local r=/tmp/obx-rmqfault-$$/rabbitmq
    mkdir -p "$r/log" "$r/mnesia"
    : >"$r/rabbitmq-env.conf"
    echo '[].' >"$r/enabled_plugins"
    { printf 'log.console = false\nlog.file.level = info\n'; printf '%s\n' "$@"; } >"$r/rabbitmq.conf"
    chmod 755 /tmp/obx-rmqfault-$$
    chown -R rabbitmq:rabbitmq "$r"
}
# Its ports lie in the kernel's ephemeral range: a client connection of
# anything on the machine may hold one as its local port when the broker
# binds it (eaddrinuse). Then it starts again 1000 ports higher (twice at most).
priv_start() {
    local try e shifted port
    trap 'priv stop >/dev/null 2>&1 || true; rm -rf /tmp/obx-rmqfault-$$ "$WORK"' EXIT
    for try in 1 2 3; do
        port=$(printf '%s\n' "${PRIV_ENV[@]}" | sed -n 's/^AMQP_PORT=//p')
        PRIV_URL=amqp://guest:guest@127.0.0.1:$port
        note "starting a private RabbitMQ on 127.0.0.1:$port"
        priv rmq-start && return 0
        priv stop >/dev/null 2>&1 || true
        note "the private RabbitMQ did not start (a port taken meanwhile?): the next ports"
        shifted=()
        for e in "${PRIV_ENV[@]}"; do
            case $e in
            *_PORT=* | *_PORT_MIN=*) shifted+=("${e%%=*}=$((${e#*=} + 1000))") ;;
            *) shifted+=("$e") ;;
            esac
        done
        PRIV_ENV=("${shifted[@]}")
    done
    fail "the private RabbitMQ did not start"
}

# priv_alarm on|off: raise or clear the private broker's memory alarm (a
# watermark of 0.0001 of the machine's memory, or the default 0.4) and wait
# until the broker says so (it checks its memory every second or so).
priv_alarm() {
    local mark=0.4 want=0 i
    [ "$1" = on ] && mark=0.0001 want=1
    priv rabbitmqctl -q set_vm_memory_high_watermark $mark >/dev/null
    for ((i = 0; i < 100; i++)); do
        [ "$(priv rabbitmqctl -q eval 'rabbit_alarm:get_alarms().' | grep -c memory)" -ge $want ] &&
            [ $want = 1 -o "$(priv rabbitmqctl -q eval 'rabbit_alarm:get_alarms().' | grep -c memory)" = 0 ] && return 0
        sleep 0.2
    done
    fail "the memory alarm did not turn $1"
}

# write_relay_cfg FILE URL DESTINATION [EXTRA_OPTIONS] [MAX_ATTEMPTS]
# A relay config for the database in TEST_DSN, one rabbitmq output.
write_relay_cfg() {
    cat > "$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = {
  workers = 2;
  batch_size = 500;
  ordering = "aggregate";
  max_attempts = ${5:-1000};
  poll_interval_ms = 200;
  backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; };
  drivers_dir = "\${OBX_DRIVERS}";
};
outputs = (
  { name = "rabbit"; driver = "rabbitmq";
    options = { url = "$2"; ${4:-} }; }
);
routes = (
  { event_type = "*"; aggregate_type = "*"; output = "rabbit"; destination = "$3"; }
);
CFG
}

# enqueue_events N AGGREGATES: payload {"n": g}, headers {"seq": "<g>"}
enqueue_events() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $2), 'order.created',
             jsonb_build_object('n', g, 'pad', repeat('x', 100)), jsonb_build_object('seq', g::text)))
         FROM generate_series(1, $1) g" >/dev/null
}
