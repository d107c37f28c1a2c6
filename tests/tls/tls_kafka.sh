#!/bin/bash
# The kafka driver's TLS settings reach librdkafka, client side only: the
# Kafka mock cluster has no TLS (docs/brokers.md says what is not tested).
# The output points at `openssl s_server -Verify 1 -verify_return_error`
# with the test PKI, with security.protocol SSL, ssl.ca.location,
# ssl.certificate.location and ssl.key.location as properties, and
# `check-config --connect` makes librdkafka connect: the handshake
# completes (s_server verified the relay's certificate, CN=relay, and
# printed its cipher), then the Kafka request fails as it must (s_server
# speaks no Kafka), so the check exits 1 naming the output. With the wrong
# CA as ssl.ca.location librdkafka refuses the server's certificate: the
# check exits 1 with "certificate verify failed" and s_server sees no
# client certificate.
ENG_TEST=tls_kafka
. "$(dirname "$0")/tls_lib.sh"

tls_make_certs
tls_check_verified
fresh_db tls_kafka

KP=$(free_ports 1)
# s_server_start NAME [CERT]: a TLS server (certificate CERT, default
# server) that requires a client certificate from the test CA; its output
# in $WORK/NAME.out
# (its stdin a FIFO held open: at end of input s_server quits)
mkfifo "$WORK/s_server.in"
exec 7<>"$WORK/s_server.in"
s_server_start() {
    openssl s_server -accept "127.0.0.1:$KP" -cert "$TLS/${2:-server}.pem" -key "$TLS/${2:-server}.key" \
        -CAfile "$TLS/ca.pem" -Verify 1 -verify_return_error <&7 >"$WORK/$1.out" 2>&1 &
    S_PID=$!
    ENG_PIDS+=("$S_PID")
    local i
    for ((i = 0; i < 300; i++)); do
        grep -a -q '^ACCEPT' "$WORK/$1.out" && return 0
        kill -0 "$S_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$WORK/$1.out" >&2
    fail "openssl s_server did not start"
}
s_server_stop() { kill "$S_PID" 2>/dev/null || true; wait "$S_PID" 2>/dev/null || true; }
kafka_cfg() { # FILE CA
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "kafka_tls"; driver = "kafka";
              options = { bootstrap_servers = "localhost:$KP"; };
              properties = ( ["security.protocol", "SSL"], ["ssl.ca.location", "$2"],
                             ["ssl.certificate.location", "$TLS/client.pem"],
                             ["ssl.key.location", "$TLS/client.key"] ); } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "kafka_tls"; destination = "outbox.events"; } );
CFG
}
kafka_cfg "$WORK/good.cfg" "$TLS/ca.pem"
"$OBX_BIN" init-db -c "$WORK/good.cfg" >/dev/null || fail "init-db"

s_server_start good
run_bounded 60 "$WORK/check-good.log" "$OBX_BIN" check-config -c "$WORK/good.cfg" --connect
s_server_stop
[ "$EXIT_RC" -eq 1 ] || { cat "$WORK/check-good.log" >&2; fail "check-config --connect against s_server exited $EXIT_RC, want 1 (it speaks no Kafka)"; }
grep -q 'output kafka_tls (kafka)' "$WORK/check-good.log" || { cat "$WORK/check-good.log" >&2; fail "the check does not name the output"; }
! grep -q 'certificate verify failed' "$WORK/check-good.log" || { cat "$WORK/check-good.log" >&2; fail "librdkafka refused the right CA"; }
# s_server: it verified the relay's certificate and completed the handshake
grep -a -q 'depth=0 CN = relay' "$WORK/good.out" || { cat -v "$WORK/good.out" >&2; fail "s_server saw no client certificate CN=relay"; }
grep -a -q '^CIPHER is ' "$WORK/good.out" || { cat -v "$WORK/good.out" >&2; fail "s_server: no completed handshake"; }
! grep -a -qi 'verify error' "$WORK/good.out" || { cat -v "$WORK/good.out" >&2; fail "s_server refused the relay's certificate"; }
note "handshake: s_server verified $(grep -a -m1 'depth=0 CN = relay' "$WORK/good.out"), $(grep -a -m1 '^CIPHER is ' "$WORK/good.out")"

# the wrong CA: librdkafka refuses the server's certificate
kafka_cfg "$WORK/wrong-ca.cfg" "$TLS/wrong-ca.pem"
s_server_start wrong-ca
run_bounded 60 "$WORK/check-wrong-ca.log" "$OBX_BIN" check-config -c "$WORK/wrong-ca.cfg" --connect
s_server_stop
[ "$EXIT_RC" -eq 1 ] || { cat "$WORK/check-wrong-ca.log" >&2; fail "check-config --connect with the wrong CA exited $EXIT_RC, want 1"; }
grep -q 'output kafka_tls (kafka).*certificate verify failed' "$WORK/check-wrong-ca.log" ||
    { cat "$WORK/check-wrong-ca.log" >&2; fail "wrong CA: no line naming the output and the certificate problem"; }
! grep -a -q 'depth=0 CN = relay' "$WORK/wrong-ca.out" || fail "s_server got the relay's certificate although the relay should have refused the server's"
note "wrong CA: $(grep -m1 -o 'output kafka_tls (kafka).*certificate verify failed' "$WORK/check-wrong-ca.log" | cut -c1-220)"
# the right CA, but s_server's certificate names other.example: librdkafka
# checks the name (ssl.endpoint.identification.algorithm, https by default)
s_server_start wrong-name other
run_bounded 60 "$WORK/check-wrong-name.log" "$OBX_BIN" check-config -c "$WORK/good.cfg" --connect
s_server_stop
[ "$EXIT_RC" -eq 1 ] || { cat "$WORK/check-wrong-name.log" >&2; fail "check-config --connect to a certificate for another name exited $EXIT_RC, want 1"; }
grep -q 'output kafka_tls (kafka).*certificate verify failed' "$WORK/check-wrong-name.log" ||
    { cat "$WORK/check-wrong-name.log" >&2; fail "certificate for another name: no line naming the output and the certificate problem"; }
! grep -a -q 'depth=0 CN = relay' "$WORK/wrong-name.out" || fail "s_server got the relay's certificate although the relay should have refused the server's name"
note "certificate for another name: $(grep -m1 -o 'output kafka_tls (kafka).*certificate verify failed' "$WORK/check-wrong-name.log" | cut -c1-220)"
echo "PASS tls_kafka"
