#!/bin/bash
# Answers, not errors (issue 49, item 5), once per source
# (SOURCE_MODE=poll|wal|cursor): what an operator types wrong is one line
# saying what is wrong, never a PostgreSQL error, and a non-zero exit:
# requeue and purge before init-db (run init-db), a bad event id (2), a bad
# --older-than (2), a bad replay --since/--until (2, the accepted forms
# named); a relative time ('1 hour ago') is taken; status's wording when
# nothing waits, and a pause reason's control characters shown, not obeyed.
. "$(dirname "$0")/source_lib.sh" operator_args
source_cfg "$WORK/relay.cfg" "" ""
CFG=$WORK/relay.cfg
UUID=0f8fad5b-d9cb-469f-a165-70867728950e

# expect NAME EXIT PATTERN COMMAND...: exit code, one line matching PATTERN, no raw error
expect() {
    local name=$1 want=$2 pattern=$3 rc=0
    shift 3
    "$OBX_BIN" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
    expect_eq "exit of $name" "$rc" "$want"
    expect_eq "lines on stderr of $name" "$(grep -c . "$WORK/err")" 1
    grep -qE -- "$pattern" "$WORK/err" || fail "$name: $(cat "$WORK/err")"
    if grep -qE "ERROR|LINE [0-9]|invalid input syntax" "$WORK/err"; then fail "$name: a raw PostgreSQL error: $(cat "$WORK/err")"; fi
}
RUN_INIT="run \`outbox-relay init-db -c $CFG\`"
expect "requeue before init-db" 1 "$RUN_INIT" requeue -c "$CFG" "$UUID"
expect "purge before init-db" 1 "$RUN_INIT" purge -c "$CFG" --older-than '7 days'
expect "requeue of a bad id" 2 '"1234" is not an event id \(a UUID' requeue -c "$CFG" 1234
expect "purge of a bad id" 2 '"x-y" is not an event id' purge -c "$CFG" --id "$UUID" x-y

init_db "$CFG"
expect "purge --older-than 'a week'" 2 '--older-than "a week" is not a positive interval: give one such as' \
    purge -c "$CFG" --older-than 'a week'
expect "replay --since 'an hour ago'" 2 "--since \"an hour ago\" is not a time: give an ISO 8601 time .* or a relative one \('1 hour ago'" \
    replay -c "$CFG" --since 'an hour ago'
expect "replay --until 'soonish'" 2 '--until "soonish" is not a time' \
    replay -c "$CFG" --since '2026-01-01T00:00:00Z' --until soonish
# taken: ids in braces and without hyphens, a relative time
"$OBX_BIN" requeue -c "$CFG" "{${UUID//-/}}" >"$WORK/out" 2>&1 || fail "requeue of a braced id: $(cat "$WORK/out")"
grep -q "^requeued 0 dead events" "$WORK/out" || fail "requeue: $(cat "$WORK/out")"
"$OBX_BIN" purge -c "$CFG" --older-than '7 days' --dry-run >"$WORK/out" 2>&1 || fail "purge --older-than '7 days': $(cat "$WORK/out")"
"$OBX_BIN" replay -c "$CFG" --since '2 hours ago' --until '1 hour ago' >"$WORK/out" 2>&1 ||
    fail "replay with relative times: $(cat "$WORK/out")"
grep -q "done: 0 events replayed" "$WORK/out" || fail "replay: $(cat "$WORK/out")"
# a pause reason is shown, not obeyed: its control characters printed as \xNN
"$OBX_BIN" pause -c "$CFG" --output mem --reason $'deploy\e[2J\rdone' >/dev/null || fail "pause"
"$OBX_BIN" status -c "$CFG" >"$WORK/paused" || fail "status while paused"
grep -q 'paused: .*output mem since .* (deploy\\x1b\[2J\\x0ddone)$' "$WORK/paused" ||
    fail "the pause reason: $(cat -v "$WORK/paused")"
if grep -q $'\e' "$WORK/paused"; then fail "status printed a raw escape: $(cat -v "$WORK/paused")"; fi
"$OBX_BIN" resume -c "$CFG" --output mem >/dev/null || fail "resume"
if [ "$MODE" = poll ]; then
    "$OBX_BIN" status -c "$CFG" >"$WORK/status" || fail "status"
    grep -q "^waiting for an output:  0$" "$WORK/status" || fail "status when nothing waits: $(cat "$WORK/status")"
    grep -q "^oldest pending age (s): 0.000$" "$WORK/status" || fail "status: $(cat "$WORK/status")"
fi
echo "operator arguments ($MODE): one clear line for each bad input, relative times taken"
