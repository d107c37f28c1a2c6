#!/bin/bash
# The metrics socket cannot starve the relay: with the relay under
# `ulimit -n 1024`, 1,100 connections holding half-sent requests leave it
# half its descriptors or more, publishing, and reconnecting to PostgreSQL
# after its sessions are killed; /metrics answers again once they go. Other methods
# (HEAD too) get 405, other paths 404; a listen value that cannot be parsed
# is refused; all interfaces draw a warning.
. "$(dirname "$0")/../lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
OBX_DRIVERS=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}
export OBX_DRIVERS
WORK=$(mktemp -d /tmp/obx-metrics.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
    local rc=$? p
    rm -f "$WORK/hold"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ "$rc" -eq 0 ] && rm -rf "$WORK" || { echo "--- work dir kept: $WORK" >&2; for f in "$WORK"/*.log; do echo "--- $f" >&2; tail -n 5 "$f" >&2; done; }
    exit "$rc"
}
trap cleanup EXIT

fresh_db metrics_socket
PORT=$("$MC" freeport)
write_cfg() { # write_cfg FILE LISTEN
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 100; poll_interval_ms = 200; drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "mem"; driver = "memory"; } );
routes = ( { output = "mem"; destination = "d"; } );
metrics = { listen = "$2"; };
CFG
}
write_cfg "$WORK/relay.cfg" "127.0.0.1:$PORT"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

# listen values: refused when unparsable, a warning for all interfaces
for bad in "127.0.0.1:99999" "127.0.0.1:80x" "127.0.0.1" "999.1.1.1:9187" "127.0.0.1:0" "host.example:9187"; do
    write_cfg "$WORK/bad.cfg" "$bad"
    "$OBX_BIN" run -c "$WORK/bad.cfg" --drain >"$WORK/bad.log" 2>&1 && fail "listen \"$bad\" was accepted"
    grep -q "metrics.listen \"$bad\": expected IPV4:PORT" "$WORK/bad.log" || fail "listen \"$bad\": $(cat "$WORK/bad.log")"
done
write_cfg "$WORK/all.cfg" ":$("$MC" freeport)"
"$OBX_BIN" run -c "$WORK/all.cfg" --drain >"$WORK/all.log" 2>&1 || fail "run with listen :PORT"
grep -q "serves every network interface" "$WORK/all.log" || fail "no warning for all interfaces"

(ulimit -n 1024 && exec "$OBX_BIN" run -c "$WORK/relay.cfg") >"$WORK/relay.log" 2>&1 &
RELAY=$!
PIDS+=("$RELAY")
for _ in $(seq 200); do
    [ "$("$MC" get "$PORT" GET /metrics 2>/dev/null | head -1)" = 200 ] && break
    kill -0 "$RELAY" 2>/dev/null || fail "the relay exited"
    sleep 0.1
done
expect_eq "GET /metrics" "$("$MC" get "$PORT" GET /metrics | head -1)" 200
expect_eq "HEAD /metrics" "$("$MC" get "$PORT" HEAD /metrics | head -1)" 405
expect_eq "POST /metrics" "$("$MC" get "$PORT" POST /metrics | head -1)" 405
expect_eq "GET /other" "$("$MC" get "$PORT" GET /other | head -1)" 404

touch "$WORK/hold"
"$MC" flood "$PORT" 1100 "$WORK/hold" >"$WORK/flood.out" 2>"$WORK/flood.log" &
PIDS+=("$!")
FLOOD=$!
for _ in $(seq 600); do
    grep -q connected "$WORK/flood.out" && break
    sleep 0.1
done
expect_eq "connections held" "$(cat "$WORK/flood.out")" "connected 1100"
FDS=$(ls "/proc/$RELAY/fd" | wc -l)
# the socket takes at most half the descriptors (512 of 1,024), one address three quarters of that
[ "$FDS" -lt 512 ] || fail "the relay holds $FDS descriptors with the flood on"

wait_published() { # wait_published N: up to 60 s
    for _ in $(seq 600); do
        [ "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" -ge "$1" ] && return 0
        kill -0 "$RELAY" 2>/dev/null || fail "the relay exited"
        sleep 0.1
    done
    fail "published $(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL") of $1 with the flood on"
}
enqueue_bulk 500 50 >/dev/null
wait_published 500
KILLED=$(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
              WHERE datname = '$TEST_DB' AND pid <> pg_backend_pid()")
[ "$KILLED" -ge 2 ] || fail "killed only $KILLED relay sessions"
enqueue_bulk 500 50 >/dev/null
wait_published 1000
expect_eq "relay sessions again" \
    "$(sql "SELECT count(*) >= 2 FROM pg_stat_activity WHERE datname = '$TEST_DB' AND pid <> pg_backend_pid()")" t
rm -f "$WORK/hold"
wait "$FLOOD"

# the server drops the flood's connections as it reads their EOF (or its timeout fires)
for _ in $(seq 300); do
    OUT=$("$MC" get "$PORT" GET /metrics || true)
    [ "$(head -1 <<<"$OUT")" = 200 ] && break
    sleep 0.1
done
expect_eq "GET /metrics after the flood" "$(head -1 <<<"$OUT")" 200
expect_eq "published counter" "$(grep '^outbox_relay_published_total ' <<<"$OUT")" "outbox_relay_published_total 1000"
kill -TERM "$RELAY"
wait "$RELAY" || fail "the relay exited $? after SIGTERM"
grep -qi "too many open files" "$WORK/relay.log" && fail "descriptors ran out: $(grep -i -m1 'too many open files' "$WORK/relay.log")"
note "flood of 1100: relay held $FDS descriptors, killed $KILLED sessions, 1000 published"
echo "PASS metrics_socket"
