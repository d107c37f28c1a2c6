#!/bin/bash
# The webhook driver over HTTPS, verified both ways: a python3 receiver
# (https_receiver.py) on a kernel-chosen port serves TLS with the test PKI
# and requires a client certificate from the test CA. The relay's output
# names the CA, its certificate and key (libcurl's cainfo, sslcert, sslkey
# in `properties`); `run --drain` delivers N events and the receiver counts
# each once, from client CN=relay. With the wrong CA as cainfo no request
# reaches the receiver: the relay logs the certificate problem naming the
# output, publishes nothing and stops on SIGTERM; with a client certificate
# from the wrong CA the receiver refuses the handshake.
ENG_TEST=tls_webhook
. "$(dirname "$0")/tls_lib.sh"

N=${TLS_WEBHOOK_EVENTS:-500}
tls_make_certs
tls_check_verified

# receiver NAME CERT: an HTTPS receiver with that server certificate; its
# port in $WORK/NAME.port, its records in $WORK/NAME.received
receiver() {
    : >"$WORK/$1.received"
    python3 "$(dirname "$0")/https_receiver.py" "$TLS/$2.pem" "$TLS/$2.key" "$TLS/ca.pem" \
        "$WORK/$1.port" "$WORK/$1.received" 2>"$WORK/$1.err" &
    local pid=$! i
    ENG_PIDS+=("$pid")
    for ((i = 0; i < 100; i++)); do
        [ -s "$WORK/$1.port" ] && return 0
        kill -0 "$pid" 2>/dev/null || fail "the HTTPS receiver exited: $(cat "$WORK/$1.err")"
        sleep 0.1
    done
    fail "the HTTPS receiver wrote no port"
}
receiver main server
ln -s main.received "$WORK/received"
ln -s main.err "$WORK/receiver.err"
URL=https://localhost:$(cat "$WORK/main.port")/hooks
# plain HTTP is not served, and the receiver insists on a client certificate
! curl -sS -m 10 -o /dev/null "http://localhost:$(cat "$WORK/main.port")/hooks" -d x 2>/dev/null ||
    fail "the receiver answered plain HTTP"
! curl -sS -m 10 -o /dev/null --cacert "$TLS/ca.pem" "$URL" -d x 2>/dev/null ||
    fail "the receiver answered a client without a certificate"

fresh_db tls_webhook
wh_cfg() { # FILE CA CERT KEY [URL] (no CERT: no client certificate)
    local certs=""
    [ -z "$3" ] || certs=", [\"sslcert\", \"$3\"], [\"sslkey\", \"$4\"]"
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 100; poll_interval_ms = 200; drivers_dir = "\${OBX_DRIVERS}"; max_attempts = 3;
          backoff = { initial_ms = 50; max_ms = 400; multiplier = 2.0; jitter = 0.2; }; };
outputs = ( { name = "hook_tls"; driver = "webhook";
              options = { url = "${5:-$URL}"; max_in_flight = 8; timeout_ms = 5000; };
              properties = ( ["cainfo", "$2"]$certs ); } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "hook_tls"; destination = "orders"; } );
CFG
}
wh_cfg "$WORK/good.cfg" "$TLS/ca.pem" "$TLS/client.pem" "$TLS/client.key"
"$OBX_BIN" init-db -c "$WORK/good.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null
drain "$WORK/good.cfg" "$WORK/relay.log" 120
expect_eq "rows published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" "$N"
expect_eq "events the receiver got" "$(cut -d' ' -f1 "$WORK/received" | sort -u | wc -l)" "$N"
expect_eq "requests from a client other than CN=relay" "$(grep -vc ' relay$' "$WORK/received")" 0
expect_eq "events received that are not in the outbox" \
    "$(comm -23 <(cut -d' ' -f1 "$WORK/received" | sort -u) <(sql "SELECT event_id FROM outbox" | sort) | wc -l)" 0
note "$N events delivered over HTTPS with a client certificate"

# wrong_case NAME CA CERT KEY PATTERN [URL]: one event, a relay with these
# files publishes nothing, its log names the output with PATTERN; SIGTERM
# stops it.
wrong_case() {
    local name=$1 pattern=$5 before
    wh_cfg "$WORK/$name.cfg" "$2" "$3" "$4" "${6:-}"
    sql "SELECT outbox_enqueue('Order', 'agg-$name', 'order.created', '{}')" >/dev/null
    before=$(wc -l <"$WORK/received")
    start_relay "$WORK/$name.cfg" "$WORK/$name.log"
    local i
    for ((i = 0; i < 600; i++)); do
        grep -q "output hook_tls.*$pattern" "$WORK/$name.log" && break
        kill -0 "$RELAY_PID" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "output hook_tls.*$pattern" "$WORK/$name.log" ||
        { tail -20 "$WORK/$name.log" >&2; fail "$name: no log line naming the output with '$pattern'"; }
    stop_relay "$RELAY_PID" 30
    expect_eq "$name: rows published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 1
    expect_eq "$name: requests the receiver answered" "$(wc -l <"$WORK/received")" "$before"
    note "$name: $(grep -m1 -o "output hook_tls.*$pattern[^;]*" "$WORK/$name.log")"
    sql "DELETE FROM outbox WHERE published_at IS NULL" >/dev/null
}
# the server's certificate does not chain to the wrong CA: curl 60
wrong_case wrong-ca "$TLS/wrong-ca.pem" "$TLS/client.pem" "$TLS/client.key" 'curl 60: SSL certificate problem'
# a client certificate the receiver's CA did not sign: the handshake is refused
# (TLS 1.3: the receiver judges it after the handshake; curl then reports
# 56, the alert, or 55, a closed connection, and the driver adds its hint)
wrong_case wrong-client "$TLS/ca.pem" "$TLS/wrong-client.pem" "$TLS/wrong-client.key" \
    'may have refused the client certificate\|curl 35: .*unknown ca'
grep -q 'CERTIFICATE_VERIFY_FAILED' "$WORK/receiver.err" ||
    { cat "$WORK/receiver.err" >&2; fail "the receiver did not refuse the wrong client certificate"; }
# no client certificate at all: the receiver wants one
wrong_case no-cert "$TLS/ca.pem" "" "" 'may require a client certificate\|curl 35: '
grep -q 'PEER_DID_NOT_RETURN_A_CERTIFICATE' "$WORK/receiver.err" ||
    { cat "$WORK/receiver.err" >&2; fail "the receiver did not refuse a client without a certificate"; }
# the right CA, but a certificate for other.example at localhost: refused
# by name (curl 60, "no alternative certificate subject name matches")
receiver other other
curl -sS -m 10 -o /dev/null --cacert "$TLS/ca.pem" --cert "$TLS/client.pem" --key "$TLS/client.key" \
    --connect-to "other.example:443:localhost:$(cat "$WORK/other.port")" https://other.example/ -d x ||
    fail "the other-name receiver does not work"
wrong_case wrong-name "$TLS/ca.pem" "$TLS/client.pem" "$TLS/client.key" 'curl 60: SSL: no alternative certificate subject name' \
    "https://localhost:$(cat "$WORK/other.port")/hooks"
echo "PASS tls_webhook"
