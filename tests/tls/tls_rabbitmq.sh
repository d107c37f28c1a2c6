#!/bin/bash
# amqps:// with peer verification both ways: a private RabbitMQ (free
# ports) with an ssl listener on the test PKI that verifies peers and fails
# a client without a certificate (verify_peer, fail_if_no_peer_cert). The
# relay's output (tls_ca, tls_cert, tls_key, url amqps://localhost:PORT)
# publishes N events to a queue it declares; rconsume reads every one back
# (over the broker's plain listener: the consumer is not under test). With
# the wrong CA as tls_ca, with a client certificate from the wrong CA and
# with none, `check-config --connect` exits 1 naming the output and the
# certificate problem.
ENG_TEST=tls_rabbitmq
. "$(dirname "$0")/tls_lib.sh"
RCONSUME=${RCONSUME:?RCONSUME must name the rconsume helper}

N=${TLS_RMQ_EVENTS:-500}
tls_make_certs
tls_check_verified

# the private broker: AMQP, distribution, 8 for rabbitmqctl, epmd, then TLS
BASE=$(free_ports 12)
SSLP=$((BASE + 11))
RDIR=$(mktemp -d /tmp/obx-tls-rmq.XXXXXX)
chmod 755 "$RDIR"
R_ENV=(SVC_DIR=$RDIR AMQP_PORT=$BASE RMQ_DIST_PORT=$((BASE + 1)) RMQ_CTL_PORT_MIN=$((BASE + 2))
       RMQ_EPMD_PORT=$((BASE + 10)))
ENG_AT_EXIT+=('env "${R_ENV[@]}" "$SERVICES" stop; rm -rf "$RDIR"')
tls_key_for rabbitmq "$RDIR/tls"
mkdir -p "$RDIR/rabbitmq/log" "$RDIR/rabbitmq/mnesia"
: >"$RDIR/rabbitmq/rabbitmq-env.conf"
echo '[].' >"$RDIR/rabbitmq/enabled_plugins"
cat >"$RDIR/rabbitmq/rabbitmq.conf" <<CONF
log.console = false
log.file.level = info
listeners.ssl.default = 127.0.0.1:$SSLP
ssl_options.cacertfile = $RDIR/tls/ca.pem
ssl_options.certfile = $RDIR/tls/server.pem
ssl_options.keyfile = $RDIR/tls/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
CONF
chown -R rabbitmq:rabbitmq "$RDIR/rabbitmq"
note "starting a private RabbitMQ: amqp 127.0.0.1:$BASE, amqps 127.0.0.1:$SSLP"
env "${R_ENV[@]}" "$SERVICES" rmq-start >"$WORK/rmq-start.log" 2>&1 ||
    { cat "$WORK/rmq-start.log" >&2; fail "the private RabbitMQ did not start"; }
tls_wait_port "$SSLP" 30
PLAIN_URL=amqp://guest:guest@127.0.0.1:$BASE

fresh_db tls_rabbitmq
Q=obx_tls_$$
X=obx_tls_x
rmq_cfg() { # FILE CA CERT KEY
    local certs=""
    [ -z "$3" ] || certs="tls_cert = \"$3\"; tls_key = \"$4\";"
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 100; poll_interval_ms = 200; drivers_dir = "\${OBX_DRIVERS}"; max_attempts = 3; };
outputs = ( { name = "rabbit_tls"; driver = "rabbitmq";
              options = { url = "amqps://guest:guest@localhost:$SSLP"; tls_ca = "$2"; $certs
                          declare_exchange = "$X"; declare_queue = "$Q"; bind_routing_key = "orders.#"; }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "rabbit_tls"; destination = "$X/orders.\${event_type}"; } );
CFG
}
rmq_cfg "$WORK/good.cfg" "$TLS/ca.pem" "$TLS/client.pem" "$TLS/client.key"
"$OBX_BIN" init-db -c "$WORK/good.cfg" >/dev/null || fail "init-db"
run_bounded 60 "$WORK/check-good.log" "$OBX_BIN" check-config -c "$WORK/good.cfg" --connect
[ "$EXIT_RC" -eq 0 ] || { cat "$WORK/check-good.log" >&2; fail "check-config --connect over amqps exited $EXIT_RC"; }
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null
drain "$WORK/good.cfg" "$WORK/relay.log" 120
expect_eq "rows published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$N"
r=$("$RCONSUME" "$PLAIN_URL" read "$Q" "$N" 10000 --content-type application/json) ||
    { echo "$r"; fail "rconsume: not every event, or a check failed"; }
echo "$r"
expect_eq "unique events consumed" "$(sed -n 's/.*\bunique=\([0-9]*\).*/\1/p' <<<"$r")" "$N"
note "$N events over amqps with a client certificate, all consumed"

# check_refused NAME CA CERT KEY PATTERN: check-config --connect exits 1
# naming the output, with PATTERN (what was refused) on that line
check_refused() {
    rmq_cfg "$WORK/$1.cfg" "$2" "$3" "$4"
    run_bounded 60 "$WORK/check-$1.log" "$OBX_BIN" check-config -c "$WORK/$1.cfg" --connect
    [ "$EXIT_RC" -eq 1 ] || { cat "$WORK/check-$1.log" >&2; fail "$1: check-config --connect exited $EXIT_RC, want 1"; }
    grep -q "output rabbit_tls (rabbitmq).*$5" "$WORK/check-$1.log" ||
        { cat "$WORK/check-$1.log" >&2; fail "$1: no error naming the output with '$5'"; }
    note "$1: $(grep -m1 'output rabbit_tls (rabbitmq)' "$WORK/check-$1.log")"
}
check_refused wrong-ca "$TLS/wrong-ca.pem" "$TLS/client.pem" "$TLS/client.key" 'SSL peer cert verification failed'
check_refused wrong-client "$TLS/ca.pem" "$TLS/wrong-client.pem" "$TLS/wrong-client.key" 'refused the client certificate'
# no client certificate at all
check_refused no-cert "$TLS/ca.pem" "" "" 'may require a client certificate'
echo "PASS tls_rabbitmq"
