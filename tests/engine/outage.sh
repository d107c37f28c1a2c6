#!/bin/bash
# An outage costs no attempts (issue 11). The memory driver plays an
# unreachable broker while $WORK/down exists (unavailable_file: refusals as
# OBX_UNAVAILABLE, probe says unavailable). With max_attempts = 2 and a
# backoff of 10-20 ms, 200 events wait out an outage a hundred times longer
# than max_attempts x backoff; then the file goes and the relay drains:
# nothing dead-lettered, every event published exactly once, attempts = 1
# for each, and the log says once that the output is unavailable and once
# that it is back, after how long down (the whole outage); during the
# outage `status` counts the events waiting for the output, and /metrics
# shows it down.
ENG_TEST=outage
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_outage
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 20; max_attempts = 2;
    backoff = { initial_ms = 10; max_ms = 20; multiplier = 2.0; jitter = 0.0; };" \
    "unavailable_file = \"$WORK/down\";" "metrics = { listen = \"127.0.0.1:$PORT\"; };"
# scrape: GET /metrics, the body on stdout
scrape() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3); }
init_db "$WORK/relay.cfg"
enqueue_bulk 200 20
touch "$WORK/down"

start_relay "$WORK/relay.cfg" "$WORK/relay.log" --drain
PID=$RELAY_PID
wait_log "$WORK/relay.log" "output mem unavailable" 60
wait_sql "SELECT count(*) > 0 FROM outbox WHERE last_error IS NOT NULL" t 60
sleep 3 # the outage goes on: probes, no claims, no attempts
DURING=$(sql "SELECT count(*) FILTER (WHERE dead_at IS NOT NULL) || '/' || count(*) FILTER (WHERE published_at IS NOT NULL)
              || '/' || max(attempts) FROM outbox")
SEEN=$(sql "SELECT string_agg(DISTINCT last_error, ' | ') FROM outbox WHERE last_error IS NOT NULL")
WAITING=$("$OBX_BIN" status -c "$WORK/relay.cfg" --json | sed -n 's/.*"waiting_for_output":\([0-9]*\).*/\1/p')
[ "${WAITING:-0}" -ge 1 ] || fail "status shows no event waiting for the unavailable output"
scrape | grep -q '^outbox_relay_output_up{output="mem"} 0$' || fail "/metrics does not show the output down"
rm -f "$WORK/down"
wait_exit "$PID" 120
expect_eq "relay exit code" "$EXIT_RC" 0
note "during the outage: last_error [$SEEN]; deferred $(relay_stat "$WORK/relay.log" deferred)"
expect_eq "during the outage: dead/published/max attempts" "$DURING" "0/0/0"

load_record
check_all_published
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "broker log lines per event" \
    "$(sql "SELECT string_agg(DISTINCT n::text, ',') FROM (SELECT count(r.line) n FROM outbox o
            LEFT JOIN r USING (event_id) GROUP BY o.id) x")" 1
expect_eq "attempts per event" "$(sql "SELECT string_agg(DISTINCT attempts::text, ',') FROM outbox")" 1
[ "$(relay_stat "$WORK/relay.log" deferred)" -ge 1 ] || fail "no claim was deferred: the outage was not exercised"
expect_eq "\"unavailable\" log lines" "$(grep -c "output mem unavailable" "$WORK/relay.log")" 1
expect_eq "\"is back\" log lines" "$(grep -c "output mem is back" "$WORK/relay.log")" 1
# the whole outage, not the last probe's wait: it began before the "unavailable"
# line was seen and lasted past the 3 s slept after it, so at least 3.0 s
BACK_S=$(sed -n 's/.*output mem is back after \([0-9]*\.[0-9]\) s down$/\1/p' "$WORK/relay.log")
[ -n "$BACK_S" ] || fail "the back line's wording: $(grep "is back" "$WORK/relay.log")"
awk -v s="$BACK_S" 'BEGIN { exit !(s >= 3.0) }' || fail "down for $BACK_S s by the back line, the outage lasted over 3 s"
check_logs_clean
echo "PASS outage"
