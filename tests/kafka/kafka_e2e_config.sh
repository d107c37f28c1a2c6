#!/bin/bash
# A bad property gives a clear error and a non-zero exit, not a hang; an
# unreachable bootstrap pauses the output (rows stay pending, no attempt
# counted, the reason recorded), without crashing, and the relay stops
# cleanly on SIGTERM.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

fresh_db kt_e2e_config
write_relay_cfg "$WORK/bad.cfg" "$KAFKA_BOOTSTRAP" kt.config 1 30000 '["no.such.property", "1"]'
"$OBX_BIN" init-db -c "$WORK/bad.cfg" >/dev/null || fail "init-db"
sql "SELECT count(outbox_enqueue('Order', 'agg-' || g, 'order.created', jsonb_build_object('n', g)))
     FROM generate_series(1, 5) g" >/dev/null

rc=0; timeout 60 "$OBX_BIN" run -c "$WORK/bad.cfg" --drain 2> "$WORK/bad.log" || rc=$?
[ "$rc" != 124 ] || fail "run with a bad property hung"
[ "$rc" != 0 ] || fail "run with a bad property exited 0"
grep -q 'no.such.property' "$WORK/bad.log" || { cat "$WORK/bad.log" >&2; fail "the error does not name the property"; }
note "bad property: exit $rc: $(grep -m1 'no.such.property' "$WORK/bad.log")"

write_relay_cfg "$WORK/acks.cfg" "$KAFKA_BOOTSTRAP" kt.config 1 30000 '["acks", "1"]'
rc=0; timeout 60 "$OBX_BIN" run -c "$WORK/acks.cfg" --drain 2> "$WORK/acks.log" || rc=$?
[ "$rc" != 124 ] && [ "$rc" != 0 ] || fail "run with acks=1: exit $rc"
grep -q '"acks"' "$WORK/acks.log" || { cat "$WORK/acks.log" >&2; fail "acks=1 not refused by name"; }

# unreachable bootstrap: a port nobody listens on
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_relay_cfg "$WORK/down.cfg" "127.0.0.1:$port" kt.config 1 1000
"$OBX_BIN" run -c "$WORK/down.cfg" 2> "$WORK/down.log" &
relay=$!
for ((i = 0; i < 300; i++)); do
    grep -q "output kafka unavailable" "$WORK/down.log" &&
        [ "$(sql "SELECT count(*) FROM outbox WHERE last_error IS NOT NULL")" -ge 1 ] && break
    kill -0 "$relay" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$relay" 2>/dev/null || { tail -20 "$WORK/down.log" >&2; fail "relay died with an unreachable bootstrap"; }
kill -TERM "$relay"
rc=0; wait "$relay" || rc=$?
[ "$rc" = 0 ] || { tail -20 "$WORK/down.log" >&2; fail "relay exited $rc after SIGTERM"; }
expect_eq "published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 0
expect_eq "dead" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "attempts counted while unreachable" "$(sql "SELECT max(attempts) FROM outbox")" 0
grep -q "output kafka unavailable" "$WORK/down.log" || fail "the output was never paused"
err=$(sql "SELECT last_error FROM outbox WHERE last_error IS NOT NULL LIMIT 1")
note "unreachable bootstrap: last_error: $err"
case $err in *unavailable*) ;; *) fail "last_error does not say the output was unavailable: $err" ;; esac
echo "PASS kafka_e2e_config"
