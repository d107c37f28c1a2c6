#!/bin/bash
# Through the relay: wrong credentials, then a closed port. The relay keeps
# running, retries with backoff (max_attempts = 3 here so the run ends), and
# dead-letters with a clear last_error; no crash, no hang, no password shown.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_common.sh"
trap 'rm -rf "$WORK"' EXIT
fresh_db rmq_e2e_bad

try() { # NAME URL EXPECTED-ERROR-TEXT
    write_relay_cfg "$WORK/$1.cfg" "$2" "obx_nowhere" "connect_timeout_ms = 1000;" 3
    "$OBX_BIN" init-db -c "$WORK/$1.cfg" >/dev/null || fail "init-db"
    sql "TRUNCATE outbox" >/dev/null
    enqueue_events 20 4
    local rc=0
    timeout 120 "$OBX_BIN" run -c "$WORK/$1.cfg" --drain 2>"$WORK/$1.log" || rc=$?
    [ $rc -ne 124 ] || fail "$1: the relay hung"
    [ $rc -lt 128 ] || fail "$1: the relay crashed (exit $rc)"
    expect_eq "$1: dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 20
    expect_eq "$1: attempts" "$(sql "SELECT string_agg(DISTINCT attempts::text, ',') FROM outbox")" 3
    local err; err=$(sql "SELECT max(last_error) FROM outbox")
    echo "$1: last_error: $err"
    grep -qF "$3" <<<"$err" || fail "$1: last_error does not say '$3'"
    ! grep -q "S3cretWrong" "$WORK/$1.log" - <<<"$err" || fail "$1: the password was printed"
}
try wrong_password "amqp://guest:S3cretWrong@127.0.0.1:$AMQP_PORT" "ACCESS_REFUSED"
try closed_port "amqp://guest:guest@127.0.0.1:1" "not connected: connect to amqp://127.0.0.1:1 vhost /"
echo "PASS rmq_e2e_bad_broker"
