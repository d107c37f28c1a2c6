# Helpers for the webhook tests; source after tests/lib.sh.
WH_SERVER=${WH_SERVER:?WH_SERVER must name the whserver executable}
export WEBHOOK_TEST_SECRET="test-secret-$$-$RANDOM"

# wh_server NAME: starts whserver (verifying signatures with
# $WEBHOOK_TEST_SECRET) on a free loopback port and stops it when the test
# exits. Sets WH_DIR, WH_URL, WH_REC (the request records) and WH_PID.
wh_server() {
    WH_DIR=$(mktemp -d "/tmp/obx-webhook-$1.XXXXXX")
    WH_REC=$WH_DIR/records.tsv
    "$WH_SERVER" -p "$WH_DIR/port" -o "$WH_REC" -s WEBHOOK_TEST_SECRET 2>"$WH_DIR/server.err" &
    WH_PID=$!
    trap 'kill "$WH_PID" 2>/dev/null || true' EXIT
    local i
    for i in $(seq 100); do
        [ -s "$WH_DIR/port" ] && break
        kill -0 "$WH_PID" 2>/dev/null || fail "whserver exited: $(cat "$WH_DIR/server.err")"
        sleep 0.05
    done
    [ -s "$WH_DIR/port" ] || fail "whserver wrote no port"
    WH_URL=http://127.0.0.1:$(cat "$WH_DIR/port")
    export WH_URL
}

# wh_stop: stops the server and waits, so the records are complete.
wh_stop() {
    kill "$WH_PID" 2>/dev/null || true
    wait "$WH_PID" 2>/dev/null || true
}
