# Helpers for the TLS tests (tests/tls/*.sh): the engine tests' helpers
# (WORK, ENG_PIDS, ENG_AT_EXIT, the memory driver's record) and, made with
# openssl in $WORK/tls, a private PKI (EC prime256v1 keys, valid 2 days):
#   ca.pem ca.key           the CA every server and the relay trust
#   server.pem server.key   CN=localhost, SAN DNS:localhost, IP:127.0.0.1 (serverAuth)
#   client.pem client.key   CN=relay (clientAuth), for the relay
#   wrong-ca.pem            a second, unrelated CA (the wrong-CA cases)
#   wrong-client.pem .key   CN=relay, signed by the wrong CA
#   other.pem other.key     CN=other.example, SAN DNS:other.example only, signed
#                           by the CA: a server certificate for another name
# Source after setting ENG_TEST. Files are world-readable but the keys
# (0600, root's): a server that drops to its own user gets its own copy
# (tls_key_for USER DIR).
# shellcheck disable=SC1091
. "$(dirname "${BASH_SOURCE[0]}")/../engine/engine_lib.sh"

TLS=$WORK/tls

# tls_make_certs: the files above (about 0.1 s).
tls_make_certs() {
    mkdir -p "$TLS"
    chmod 755 "$TLS"
    (
        cd "$TLS"
        tls_ca ca "outbox-relay test CA $$"
        tls_ca wrong-ca "unrelated test CA $$"
        tls_leaf server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
        tls_leaf client ca relay "extendedKeyUsage=clientAuth"
        tls_leaf other ca other.example "subjectAltName=DNS:other.example
extendedKeyUsage=serverAuth"
        tls_leaf wrong-client wrong-ca relay "extendedKeyUsage=clientAuth"
        chmod 644 ./*.pem
        chmod 600 ./*.key
        rm -f ./*.csr ./*.srl ./*.ext
    ) || fail "openssl could not make the test certificates"
}
# tls_ca NAME CN: a self-signed CA certificate NAME.pem and its key NAME.key.
tls_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=$2" -keyout "$1.key" -out "$1.pem" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        2>/dev/null
}
# tls_leaf NAME CA CN EXTENSIONS: NAME.pem signed by CA, its key NAME.key.
tls_leaf() {
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=$3" -keyout "$1.key" -out "$1.csr" 2>/dev/null &&
        printf 'basicConstraints=CA:FALSE\n%s\n' "$4" >"$1.ext" &&
        openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
            -days 2 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}

# tls_key_for USER DIR: the server's certificates (server, other), keys and
# the CA in DIR, owned by USER (the keys 0600), for a server that runs as USER.
tls_key_for() {
    mkdir -p "$2"
    cp "$TLS/server.pem" "$TLS/server.key" "$TLS/other.pem" "$TLS/other.key" "$TLS/ca.pem" "$2/"
    chown "$1:" "$2" "$2"/*.pem "$2"/*.key
    chmod 755 "$2"
    chmod 600 "$2"/*.key
}

# tls_subject FILE: the certificate's subject, as openssl prints it.
tls_subject() { openssl x509 -in "$1" -noout -subject; }

# tls_check_verified: the PKI is what it claims (the test's assertions rely
# on it): the server and client chain to the CA, not to the wrong one.
tls_check_verified() {
    openssl verify -CAfile "$TLS/ca.pem" "$TLS/server.pem" "$TLS/client.pem" >/dev/null ||
        fail "the test certificates do not verify against their CA"
    openssl verify -CAfile "$TLS/ca.pem" "$TLS/other.pem" >/dev/null ||
        fail "the other-name certificate does not verify against the CA"
    ! openssl verify -CAfile "$TLS/wrong-ca.pem" "$TLS/server.pem" >/dev/null 2>&1 ||
        fail "the server certificate verifies against the wrong CA"
}

# tls_wait_port PORT SECONDS: until something listens on 127.0.0.1:PORT.
tls_wait_port() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    fail "nothing listens on 127.0.0.1:$1 after $2 s"
}

# run_bounded SECONDS LOG CMD...: CMD in the background with its output in
# LOG, killed after SECONDS (a liveness bound: a hang is a failure); sets
# EXIT_RC.
run_bounded() {
    local secs=$1 log=$2
    shift 2
    "$@" >"$log" 2>&1 &
    local pid=$!
    ENG_PIDS+=("$pid")
    wait_exit "$pid" "$secs"
}
