#!/bin/bash
# The relay's PostgreSQL connection over TLS, verified both ways: a private
# PostgreSQL (free port) with ssl = on and the test PKI, whose pg_hba lets
# role relay in only over TLS with a client certificate (hostssl ...
# clientcert=verify-full: the certificate's CN must be the role) and refuses
# it without TLS. The relay connects with sslmode=verify-full (the server's
# certificate must chain to sslrootcert and name the host), init-db and a
# `run --drain` publish N events to the memory driver, and every one is in
# its record. With the wrong CA as sslrootcert, init-db, check-config
# --connect and run fail at once (bounded, exit 1) saying the server's
# certificate was not verified; with no client certificate the server
# refuses the relay. WAL mode: its replication connection over the same
# conninfo. Last, the server's certificate swapped for one from the same CA
# for other.example: verify-full refuses it by name.
ENG_TEST=tls_pg
. "$(dirname "$0")/tls_lib.sh"

N=${TLS_PG_EVENTS:-500}
tls_make_certs
tls_check_verified

# the private server: its own copy of the server's files, owned by postgres
PGP=$(free_ports 1)
# (outside WORK: the cleanup removes WORK before it stops the servers)
PGDIR=$(mktemp -d /tmp/obx-tls-pg.XXXXXX)
chmod 755 "$PGDIR"
tls_key_for postgres "$PGDIR/tls"
ENG_AT_EXIT+=('SVC_DIR=$PGDIR PG_PORT=$PGP bash "$SERVICES" pg-stop; rm -rf "$PGDIR"')
SVC_DIR=$PGDIR PG_PORT=$PGP PG_EXTRA_CONF="ssl = on
ssl_cert_file = '$PGDIR/tls/server.pem'
ssl_key_file = '$PGDIR/tls/server.key'
ssl_ca_file = '$PGDIR/tls/ca.pem'
log_connections = on" bash "$SERVICES" pg-start >"$WORK/pg-start.log" 2>&1 ||
    { cat "$WORK/pg-start.log" >&2; fail "the private PostgreSQL did not start"; }
# role relay: TLS with a verified client certificate only (first match wins)
HBA=$PGDIR/pg/data/pg_hba.conf
{
    echo "hostssl all relay 127.0.0.1/32 trust clientcert=verify-full"
    echo "host    all relay 127.0.0.1/32 reject"
    echo "host    all relay ::1/128      reject"
    cat "$HBA"
} >"$HBA.new"
mv "$HBA.new" "$HBA" && chown postgres: "$HBA" && chmod 600 "$HBA"
export PGHOST=127.0.0.1 PGPORT=$PGP PGUSER=postgres PGDATABASE=postgres
psql -qAt -c "SELECT pg_reload_conf()" >/dev/null
wait_sql_pg() { # the reload is asynchronous: until pg_hba_file_rules has the hostssl line
    local i
    for ((i = 0; i < 50; i++)); do
        [ "$(psql -qAt -c "SELECT count(*) FROM pg_hba_file_rules WHERE type = 'hostssl'")" = 1 ] && return 0
        sleep 0.1
    done
    fail "pg_hba.conf reload not seen"
}
wait_sql_pg
expect_eq "ssl on the private server" "$(psql -qAt -c "SHOW ssl")" on
fresh_db tls_pg

# conninfo: verify-full against the test CA, the client certificate for CN=relay
conninfo() { # CA CERT KEY: the relay's conninfo over TLS
    echo "host=localhost hostaddr=127.0.0.1 port=$PGP user=relay dbname=$TEST_DB sslmode=verify-full sslrootcert=$1${2:+ sslcert=$2 sslkey=$3}"
}
GOOD=$(conninfo "$TLS/ca.pem" "$TLS/client.pem" "$TLS/client.key")
tls_cfg() { # FILE CONNINFO
    write_cfg "$1" "workers = 2; batch_size = 100;" ""
    sed -i "s|conninfo = \"\${TEST_DSN}\"|conninfo = \"$2\"|" "$1"
    grep -q "sslmode=verify-full" "$1" || fail "no TLS conninfo in $1"
}
tls_cfg "$WORK/good.cfg" "$GOOD"

# the server really insists: role relay without TLS is refused
! psql -qAt "host=127.0.0.1 port=$PGP user=relay dbname=$TEST_DB sslmode=disable" -c "SELECT 1" \
    >/dev/null 2>"$WORK/plain.err" || fail "the server let role relay in without TLS"
grep -q 'no encryption\|rejects connection' "$WORK/plain.err" || { cat "$WORK/plain.err" >&2; fail "plain connection: not refused by pg_hba"; }

run_bounded 60 "$WORK/init-db.log" "$OBX_BIN" init-db -c "$WORK/good.cfg"
[ "$EXIT_RC" -eq 0 ] || { cat "$WORK/init-db.log" >&2; fail "init-db over TLS exited $EXIT_RC"; }
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null
drain "$WORK/good.cfg" "$WORK/relay.log" 120
load_record
check_all_published
expect_eq "events in the memory driver's record" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" "$N"
# the server's word (log_connections): every session of role relay was TLS
grep 'connection authorized: user=relay' "$PGDIR/pg/server.log" >"$WORK/relay-sessions" ||
    fail "no session of role relay in the server's log"
grep -v 'SSL enabled' "$WORK/relay-sessions" && fail "a session of role relay without TLS"
note "$N events published over $(wc -l <"$WORK/relay-sessions") verified TLS sessions: $(head -1 "$WORK/relay-sessions" | grep -o 'SSL enabled.*')"

# the wrong CA: the server's certificate cannot be verified
BAD=$(conninfo "$TLS/wrong-ca.pem" "$TLS/client.pem" "$TLS/client.key")
tls_cfg "$WORK/wrong-ca.cfg" "$BAD"
sql "SELECT outbox_enqueue('Order', 'agg-x', 'order.created', '{}')" >/dev/null
for cmd in init-db check-config run; do
    args=(-c "$WORK/wrong-ca.cfg")
    [ "$cmd" = run ] && args+=(--drain)
    [ "$cmd" = check-config ] && args+=(--connect)
    run_bounded 60 "$WORK/wrong-ca-$cmd.log" "$OBX_BIN" "$cmd" "${args[@]}"
    [ "$EXIT_RC" -eq 1 ] || { cat "$WORK/wrong-ca-$cmd.log" >&2; fail "$cmd with the wrong CA exited $EXIT_RC, want 1"; }
    grep -q 'certificate verify failed' "$WORK/wrong-ca-$cmd.log" ||
        { cat "$WORK/wrong-ca-$cmd.log" >&2; fail "$cmd with the wrong CA: no certificate error in its output"; }
    note "$cmd, wrong CA: exit $EXIT_RC, $(grep -m1 -o '[^:]*certificate verify failed.*' "$WORK/wrong-ca-$cmd.log")"
done
expect_eq "rows published with the wrong CA" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 1

# no client certificate: the server refuses (clientcert=verify-full)
NOCERT=$(conninfo "$TLS/ca.pem")
tls_cfg "$WORK/nocert.cfg" "$NOCERT"
run_bounded 60 "$WORK/nocert.log" "$OBX_BIN" init-db -c "$WORK/nocert.cfg"
[ "$EXIT_RC" -ne 0 ] || fail "init-db without a client certificate exited 0"
grep -qi 'certificate' "$WORK/nocert.log" || { cat "$WORK/nocert.log" >&2; fail "no client certificate: the error does not say so"; }
note "no client certificate: exit $EXIT_RC, $(grep -m1 -io '[^:]*certificate.*' "$WORK/nocert.log")"
# WAL mode: the stream's replication connection (replication=database)
# takes the same conninfo, so the same verification
fresh_db tls_pg_wal
REC=$WORK/wal-record.jsonl
write_cfg "$WORK/wal.cfg" "source = \"wal\"; wal = { slot = \"$TEST_DB\"; }; workers = 2; batch_size = 100;" ""
sed -i "s|conninfo = \"\${TEST_DSN}\"|conninfo = \"$(conninfo "$TLS/ca.pem" "$TLS/client.pem" "$TLS/client.key")\"|" "$WORK/wal.cfg"
run_bounded 60 "$WORK/wal-init-db.log" "$OBX_BIN" init-db -c "$WORK/wal.cfg"
[ "$EXIT_RC" -eq 0 ] || { cat "$WORK/wal-init-db.log" >&2; fail "WAL mode: init-db over TLS exited $EXIT_RC"; }
sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 20), 'order.created',
         jsonb_build_object('n', g))) FROM generate_series(1, $N) g" >/dev/null
drain "$WORK/wal.cfg" "$WORK/wal-relay.log" 120
load_record
expect_eq "WAL mode: outbox events without an ok line" \
    "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
expect_eq "WAL mode: events in the record" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" "$N"
grep 'replication connection authorized: user=relay' "$PGDIR/pg/server.log" >"$WORK/relay-repl" ||
    fail "WAL mode: no replication session of role relay in the server's log"
grep -v 'SSL enabled' "$WORK/relay-repl" && fail "WAL mode: a replication session without TLS"
note "WAL mode: $N events over $(wc -l <"$WORK/relay-repl") TLS replication session(s)"

# the server's certificate for another name (the same CA): refused by name
psql -qAt -c "ALTER SYSTEM SET ssl_cert_file = '$PGDIR/tls/other.pem'" \
    -c "ALTER SYSTEM SET ssl_key_file = '$PGDIR/tls/other.key'" -c "SELECT pg_reload_conf()" >/dev/null
for ((i = 0; i < 50; i++)); do
    psql -qAt "host=localhost hostaddr=127.0.0.1 port=$PGP dbname=postgres sslmode=verify-ca sslrootcert=$TLS/ca.pem" \
        -c "SELECT 1" >/dev/null 2>&1 &&
        ! psql -qAt "host=localhost hostaddr=127.0.0.1 port=$PGP dbname=postgres sslmode=verify-full sslrootcert=$TLS/ca.pem" \
            -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
done
[ "$i" -lt 50 ] || fail "the server did not take the other certificate"
run_bounded 60 "$WORK/wrong-name.log" "$OBX_BIN" check-config -c "$WORK/good.cfg" --connect
[ "$EXIT_RC" -eq 1 ] || { cat "$WORK/wrong-name.log" >&2; fail "check-config --connect to a certificate for another name exited $EXIT_RC, want 1"; }
grep -q 'server certificate for "other.example" does not match host name "localhost"' "$WORK/wrong-name.log" ||
    { cat "$WORK/wrong-name.log" >&2; fail "certificate for another name: the error does not say so"; }
note "certificate for another name: exit 1, $(grep -m1 -o 'server certificate for .*' "$WORK/wrong-name.log")"
echo "PASS tls_pg"
