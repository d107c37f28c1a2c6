#!/bin/bash
# The service manager protocol (Type=notify) without systemd: a listener of
# our own on NOTIFY_SOCKET gets READY=1 once the workers run, WATCHDOG=1
# while WATCHDOG_USEC is set, RELOADING=1 then READY=1 around a reload
# (SIGHUP), STOPPING=1 after SIGTERM, in that order; the
# abstract-namespace form (@name) works too (with --drain: READY, STOPPING,
# and no WATCHDOG without WATCHDOG_USEC).
ENG_TEST=notify
. "$(dirname "$0")/../engine/engine_lib.sh"

listen() { # listen ADDRESS OUT: the listener in the background, ready on return
    python3 "$(dirname "$0")/notify_listen.py" "$1" "$2" &
    ENG_PIDS+=($!)
    local i
    for ((i = 0; i < 100; i++)); do [ -e "$2" ] && break; sleep 0.1; done
    [ -e "$2" ] || fail "listener on $1 did not start"
}
line_of() { grep -n -m1 -E "$2" "$1" | cut -d: -f1; }

fresh_db eng_notify
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 20;" ""
init_db "$WORK/relay.cfg"
enqueue_bulk 100 10

listen "$WORK/notify.sock" "$WORK/notify.out"
NOTIFY_SOCKET=$WORK/notify.sock WATCHDOG_USEC=200000 start_relay "$WORK/relay.cfg" "$WORK/relay.log"
PID=$RELAY_PID
wait_log "$WORK/notify.out" "^READY=1" 30
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
wait_log "$WORK/notify.out" "^WATCHDOG=1" 30
kill -HUP "$PID"
wait_log "$WORK/notify.out" "^RELOADING=1 MONOTONIC_USEC=[0-9]+" 30
for ((i = 0; i < 100 && $(grep -c "^READY=1" "$WORK/notify.out") < 2; i++)); do sleep 0.1; done
expect_eq "READY=1 after the reload" "$(grep -c "^READY=1" "$WORK/notify.out")" 2
[ "$(grep -n "^READY=1" "$WORK/notify.out" | tail -1 | cut -d: -f1)" -gt "$(line_of "$WORK/notify.out" "^RELOADING=1")" ] ||
    fail "READY=1 not after RELOADING=1: $(cat "$WORK/notify.out")"
kill -TERM "$PID"
wait_exit "$PID" 30
expect_eq "exit code" "$EXIT_RC" 0
wait_log "$WORK/notify.out" "^STOPPING=1" 5
ready=$(line_of "$WORK/notify.out" "^READY=1")
[ "$(line_of "$WORK/notify.out" "^WATCHDOG=1")" -gt "$ready" ] || fail "WATCHDOG=1 before READY=1: $(cat "$WORK/notify.out")"
[ "$(line_of "$WORK/notify.out" "^STOPPING=1")" -gt "$ready" ] || fail "STOPPING=1 before READY=1"
expect_eq "READY=1 messages" "$(grep -c "^READY=1" "$WORK/notify.out")" 2
expect_eq "STOPPING=1 messages" "$(grep -c "^STOPPING=1" "$WORK/notify.out")" 1
expect_eq "messages after STOPPING=1 other than WATCHDOG=1" \
    "$(sed -n "$(line_of "$WORK/notify.out" "^STOPPING=1"),\$p" "$WORK/notify.out" | grep -vc -e "^STOPPING=1" -e "^WATCHDOG=1")" 0

# the abstract namespace, and no watchdog unless asked for
enqueue_bulk 50 10
listen "@obx-notify-$$" "$WORK/abstract.out"
NOTIFY_SOCKET=@obx-notify-$$ drain "$WORK/relay.cfg" "$WORK/drain.log"
wait_log "$WORK/abstract.out" "^STOPPING=1" 5
[ "$(line_of "$WORK/abstract.out" "^STOPPING=1")" -gt "$(line_of "$WORK/abstract.out" "^READY=1")" ] ||
    fail "abstract socket: $(cat "$WORK/abstract.out")"
expect_eq "WATCHDOG=1 without WATCHDOG_USEC" "$(grep -c "^WATCHDOG=1" "$WORK/abstract.out" || true)" 0

load_record
check_all_published
expect_eq "duplicates" "$(dup_count)" 0
check_logs_clean
echo "PASS notify"
