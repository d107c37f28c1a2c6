#!/bin/bash
# Wrong credentials, a closed port and a silent peer: create still returns an
# instance, every message is refused UNAVAILABLE with a clear reason, the
# driver keeps retrying, never hangs, never crashes, never prints the
# password. probe tells a closed port from a running broker.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
SILENT_PID=
trap '[ -z "$SILENT_PID" ] || kill "$SILENT_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
Q=$(rmq_queue badbroker)

# wrong password
set +e
timeout 60 "$RMQ_HARNESS" "$RMQ_SO" -o url="amqp://guest:S3cretWrong@127.0.0.1:$AMQP_PORT" \
    publish 20 3 "$Q" --deadline 4 >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
cat "$WORK/out" "$WORK/err"
[ $rc -eq 1 ] || fail "wrong credentials: harness exit $rc (want 1: unfinished, no crash or hang)"
grep -q "ACCESS_REFUSED" "$WORK/err" || fail "wrong credentials: no ACCESS_REFUSED reason"
grep -q "not connected: login to amqp://127.0.0.1:$AMQP_PORT vhost / as guest" "$WORK/err" \
    || fail "wrong credentials: completion detail unclear"
! grep -q S3cretWrong "$WORK/out" "$WORK/err" || fail "the password was printed"
[ "$(grep -c 'ACCESS_REFUSED' "$WORK/err")" -ge 2 ] || fail "wrong credentials: no retry"

# closed port
set +e
timeout 60 "$RMQ_HARNESS" "$RMQ_SO" -o url="amqp://guest:guest@127.0.0.1:1" publish 20 3 "$Q" --deadline 3 \
    >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
cat "$WORK/out"; tail -3 "$WORK/err"
[ $rc -eq 1 ] || fail "closed port: harness exit $rc"
grep -q "not connected: connect to amqp://127.0.0.1:1 vhost /: " "$WORK/err" || fail "closed port: reason unclear"
expect_eq "closed port ok" "$(field ok "$(tail -1 "$WORK/out")")" 0
[ "$(field unavailable "$(tail -1 "$WORK/out")")" -gt 0 ] || fail "closed port: messages not refused UNAVAILABLE"

# probe: UNAVAILABLE for the closed port, OK for the running broker
expect_eq "probe, closed port" "$("$RMQ_HARNESS" "$RMQ_SO" -o url="amqp://guest:guest@127.0.0.1:1" probe 1000)" \
    "probe=UNAVAILABLE"
expect_eq "probe, running broker" "$("$RMQ_HARNESS" "$RMQ_SO" -o url="$AMQP_URL" probe 2000)" "probe=OK"

# a peer that accepts TCP and never answers: the handshake times out
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# (no output fds: its children must not keep ctest's pipe open)
socat TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork SYSTEM:'sleep 20' </dev/null >/dev/null 2>&1 &
SILENT_PID=$!
wait_port() { local i; for ((i = 0; i < 100; i++)); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
wait_port $port || fail "silent listener did not start"
set +e
start=$SECONDS
timeout 60 "$RMQ_HARNESS" "$RMQ_SO" -o url="amqp://guest:guest@127.0.0.1:$port" -o connect_timeout_ms=500 \
    publish 5 1 "$Q" --deadline 3 >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
cat "$WORK/out"; tail -3 "$WORK/err"
[ $rc -eq 1 ] || fail "silent peer: harness exit $rc (124 = hang)"
grep -q "login to amqp://127.0.0.1:$port" "$WORK/err" || fail "silent peer: reason unclear"
echo "PASS bad broker (silent peer took $((SECONDS - start)) s)"
