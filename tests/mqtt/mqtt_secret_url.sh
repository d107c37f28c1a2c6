#!/bin/bash
# A broker URL with credentials is never printed: the relay runs against a
# port nobody listens on with tcp://user:PASSWORD@..., logs its connect
# failures (text and JSON), and neither those lines nor check-config's output
# hold the password; the masked form ***@ is what they show.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

WORK=$(mktemp -d /tmp/obx-mqtt-secret.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fresh_db mqtt_secret_url
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SECRET=Zq7Secret19PW
for format in text json; do
    mq_relay_cfg "$WORK/$format.cfg" "tcp://relay:$SECRET@127.0.0.1:$port" obx/secret
    echo "log = { level = \"debug\"; format = \"$format\"; };" >>"$WORK/$format.cfg"
    "$OBX_BIN" init-db -c "$WORK/$format.cfg" >/dev/null || fail "init-db"
    sql "SELECT outbox_enqueue('Order', '1', 'order.created', '{}')" >/dev/null
    "$OBX_BIN" check-config -c "$WORK/$format.cfg" >"$WORK/$format.check" 2>&1 || true
    "$OBX_BIN" run -c "$WORK/$format.cfg" >"$WORK/$format.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -q "\*\*\*@" "$WORK/$format.log" && break; sleep 0.1; done
    kill -TERM "$pid"
    wait "$pid" || true
    grep -q "\*\*\*@" "$WORK/$format.log" || { cat "$WORK/$format.log" >&2; fail "$format: no masked url logged"; }
    if grep -q "$SECRET" "$WORK/$format.log" "$WORK/$format.check"; then
        grep "$SECRET" "$WORK/$format.log" "$WORK/$format.check" >&2
        fail "$format: the password was printed"
    fi
done
echo "PASS mqtt_secret_url"
