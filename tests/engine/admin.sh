#!/bin/bash
# The admin endpoint (admin.listen): off by default, loopback only, every
# request with the bearer token from the environment. Without the token, or
# with a wrong one: 401 and nothing changes; a GET: 405; an unknown output:
# 404. With it: POST /pause/output/mem stops mem (its events wait, none
# attempted) while mem2 runs, /resume/output/mem sends them; the source the
# same. A config binding it off loopback is refused (file:line), and run
# without the token exits 2 naming the variable; the token is never logged.
ENG_TEST=admin
. "$(dirname "$0")/engine_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
APORT=$("$MC" freeport)
ADMIN=http://127.0.0.1:$APORT
TOKEN=admin-token-$RANDOM-$RANDOM-$RANDOM
. "$(dirname "$0")/pause_lib.sh"

fresh_db eng_admin
config() { pause_cfg "" "admin = { listen = \"$1\"; };"; }
config "0.0.0.0:$APORT"
"$OBX_BIN" check-config -c "$CFG" >"$WORK/check.out" 2>&1 && fail "admin.listen on every interface was accepted"
grep -q "relay.cfg:4: .*admin.listen \"0.0.0.0:$APORT\": must be 127.0.0.1:PORT" "$WORK/check.out" || fail "off loopback: $(cat "$WORK/check.out")"
config "127.0.0.1:$APORT"
init_db "$CFG"
OUTBOX_RELAY_ADMIN_TOKEN=short "$OBX_BIN" run -c "$CFG" >"$WORK/notoken.log" 2>&1 && fail "run with a short token started"
[ $? -eq 2 ] || fail "run with a short token: exit $?"
grep -q "OUTBOX_RELAY_ADMIN_TOKEN is too short" "$WORK/notoken.log" || fail "short token: $(cat "$WORK/notoken.log")"

export OUTBOX_RELAY_ADMIN_TOKEN=$TOKEN
start_relay "$CFG" "$WORK/relay.log"
wait_log "$WORK/relay.log" "relay starting" 30
# post PATH [TOKEN]: the HTTP status (the body in $WORK/body)
post() { curl -s -o "$WORK/body" -w '%{http_code}' -X "${METHOD:-POST}" ${2:+-H "Authorization: Bearer $2"} "$ADMIN$1"; }
expect_eq "no token" "$(post /pause/output/mem)" 401
expect_eq "a wrong token" "$(post /pause/output/mem "$TOKEN-x")" 401
expect_eq "a token one character short" "$(post /pause/output/mem "${TOKEN%?}")" 401
expect_eq "GET" "$(METHOD=GET post /pause/output/mem "$TOKEN")" 405
expect_eq "an unknown output" "$(post /pause/output/nosuch "$TOKEN")" 404
expect_eq "an unknown path" "$(post /stop "$TOKEN")" 404
expect_eq "control rows after refused requests" "$(sql "SELECT count(*) FROM outbox_relay_control" 2>/dev/null || echo 0)" 0

expect_eq "pause mem" "$(post '/pause/output/mem?reason=by%20the%20tests' "$TOKEN")" 200
wait_log "$WORK/relay.log" "paused by an operator: output mem" 10
enqueue 50 a.created
enqueue 50 b.created
wait_ok "$REC2" 50
sleep 2
expect_eq "events published to the paused output" "$(ok_lines "$REC")" 0
"$OBX_BIN" status -c "$CFG" | grep -q "paused: *output mem since .* (by the tests)" || fail "status: $("$OBX_BIN" status -c "$CFG")"
expect_eq "resume mem" "$(post /resume/output/mem "$TOKEN")" 200
wait_ok "$REC" 50
expect_eq "pause the source" "$(post /pause/source "$TOKEN")" 200
wait_log "$WORK/relay.log" "paused by an operator: the source" 10
enqueue 20 b.more
sleep 2
expect_eq "events published while the source is paused" "$(ok_lines "$REC2")" 50
expect_eq "resume the source" "$(post /resume/source "$TOKEN")" 200
wait_ok "$REC2" 70
stop_relay "$RELAY_PID" 30
grep -q -- "$TOKEN" "$WORK/relay.log" && fail "the token is in the log"
expect_eq "attempts beside the publishes, dead" "$(sql "SELECT coalesce(sum(attempts), 0) - count(*), count(*) FILTER (WHERE dead_at IS NOT NULL) FROM outbox")" "0|0"
echo "PASS admin: refused without the token (401), with a wrong one (401), GET (405); pause and resume of an output and the source through it"
