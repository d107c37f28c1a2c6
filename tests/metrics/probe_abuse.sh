#!/bin/bash
# The probes answer under abuse (issue 29): with 600 idle connections and 16
# slowloris clients (a header line every 3 s each) held open, and reopened
# when the server closes them, /healthz and /readyz answer 200 once a second
# for 15 s; the figures are printed (the ceiling is 10 s per probe, not a
# timing check), and the relay publishes afterwards. (That /readyz names no
# database address: metrics_values.sh, with its private PostgreSQL stopped.)
. "$(dirname "$0")/../lib.sh"
PA=${PROBE_ABUSE:?PROBE_ABUSE must name the probe_abuse executable}
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
OBX_DRIVERS=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}
export OBX_DRIVERS
WORK=$(mktemp -d /tmp/obx-probe-abuse.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
    local rc=$? p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ "$rc" -eq 0 ] && rm -rf "$WORK" || { echo "--- work dir kept: $WORK" >&2; for f in "$WORK"/*.log; do echo "--- $f" >&2; tail -n 5 "$f" >&2; done; }
    exit "$rc"
}
trap cleanup EXIT

fresh_db probe_abuse
write_cfg() { # write_cfg FILE LISTEN CONNINFO
    cat >"$1" <<CFG
database = { conninfo = "$3"; };
relay = { workers = 2; batch_size = 100; poll_interval_ms = 200; drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "mem"; driver = "memory"; } );
routes = ( { output = "mem"; destination = "d"; } );
metrics = { listen = "$2"; };
CFG
}
wait_answer() { # wait_answer PORT PATH STATUS
    for _ in $(seq 300); do
        [ "$("$MC" get "$1" GET "$2" 2>/dev/null | head -1)" = "$3" ] && return 0
        sleep 0.1
    done
    fail "GET $2 never answered $3: $("$MC" get "$1" GET "$2")"
}

PORT=$("$MC" freeport)
write_cfg "$WORK/relay.cfg" "127.0.0.1:$PORT" "\${TEST_DSN}"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
"$OBX_BIN" run -c "$WORK/relay.cfg" >"$WORK/relay.log" 2>&1 &
RELAY=$!
PIDS+=("$RELAY")
wait_answer "$PORT" /readyz 200
"$PA" "$PORT" 600 16 15 >"$WORK/abuse.out" 2>"$WORK/abuse.log" ||
    fail "a probe failed under abuse: $(cat "$WORK/abuse.out" "$WORK/abuse.log")"
note "probes under 600 idle + 16 slow clients: $(cat "$WORK/abuse.out")"
grep -q "connected 616" "$WORK/abuse.out" || fail "the clients were not all connected: $(cat "$WORK/abuse.out")"
kill -0 "$RELAY" 2>/dev/null || fail "the relay exited"
enqueue_bulk 100 10 >/dev/null
for _ in $(seq 300); do
    [ "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" = 0 ] && break
    sleep 0.1
done
expect_eq "pending after the abuse" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
kill -TERM "$RELAY"
wait "$RELAY" || fail "the relay exited $? after SIGTERM"

echo "PASS metrics_probe_abuse"
