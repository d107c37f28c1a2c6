#!/bin/bash
# Through the relay: wrong credentials, then a closed port. Neither is the
# events' fault: the relay pauses the output and keeps running, the events
# stay pending with no attempt counted (max_attempts = 3 here: before, they
# were dead-lettered) and a clear last_error, the log says once that the
# output is unavailable, SIGTERM stops it cleanly; no crash, no password shown.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
trap 'rm -rf "$WORK"' EXIT
fresh_db rmq_e2e_bad

try() { # NAME URL EXPECTED-ERROR-TEXT
    write_relay_cfg "$WORK/$1.cfg" "$2" "obx_nowhere" "connect_timeout_ms = 1000;" 3
    "$OBX_BIN" init-db -c "$WORK/$1.cfg" >/dev/null || fail "init-db"
    sql "TRUNCATE outbox" >/dev/null
    enqueue_events 20 4
    "$OBX_BIN" run -c "$WORK/$1.cfg" 2>"$WORK/$1.log" &
    local pid=$! i
    for ((i = 0; i < 600; i++)); do
        [ "$(sql "SELECT count(*) FROM outbox WHERE last_error IS NOT NULL")" -ge 1 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || fail "$1: the relay died"
    local rc=0
    wait "$pid" || rc=$?
    [ $rc -eq 0 ] || { tail -5 "$WORK/$1.log" >&2; fail "$1: the relay exited $rc after SIGTERM"; }
    expect_eq "$1: dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
    expect_eq "$1: attempts" "$(sql "SELECT string_agg(DISTINCT attempts::text, ',') FROM outbox")" 0
    expect_eq "$1: 'unavailable' log lines" "$(grep -c "output rabbit unavailable" "$WORK/$1.log")" 1
    local err; err=$(sql "SELECT max(last_error) FROM outbox")
    echo "$1: last_error: $err"
    grep -qF "$3" <<<"$err" || fail "$1: last_error does not say '$3'"
    ! grep -q "S3cretWrong" "$WORK/$1.log" - <<<"$err" || fail "$1: the password was printed"
}
try wrong_password "amqp://guest:S3cretWrong@127.0.0.1:$AMQP_PORT" "ACCESS_REFUSED"
try closed_port "amqp://guest:guest@127.0.0.1:1" "not connected: connect to amqp://127.0.0.1:1 vhost /"
echo "PASS rmq_e2e_bad_broker"
