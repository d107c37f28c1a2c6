#!/bin/bash
# /metrics, /healthz and /readyz against the database (issue 15). A relay of
# two workers on its own PostgreSQL (private, so this test may stop it) and
# the memory driver (completing from its thread after 100 ms; every event
# fails its first attempt; event type "poison" is rejected) relays 460
# events over two routes while it is scraped; every scrape's histograms
# must be consistent (buckets cumulative, _count = the +Inf bucket). After
# the drain the counters must equal what the table says (published,
# retried, dead per output and per route, one latency
# observation per published row) and the backlog gauges must equal SQL. Then
# the output goes down (unavailable_file): /readyz 503 naming it, pending and
# the oldest pending age as SQL has them; back up: 200. Then PostgreSQL
# stops: /readyz 503 naming the database while /healthz stays 200; started
# again: 200 and the relay publishes again.
ENG_TEST=metrics_values
. "$(dirname "$0")/../engine/engine_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}

PGM_DIR=/tmp/obx-metrics-pg.$$ PGM_PORT=$("$MC" freeport)
pgm() { SVC_DIR=$PGM_DIR PG_PORT=$PGM_PORT bash "$SERVICES" "$@"; }
eng_extra_cleanup() { pgm pg-stop >/dev/null 2>&1 || true; rm -rf "$PGM_DIR"; }
pgm pg-start >"$WORK/pg-start.log" 2>&1 || fail "private PostgreSQL did not start: $(tail -3 "$WORK/pg-start.log")"
export PGHOST=127.0.0.1 PGPORT=$PGM_PORT PGUSER=postgres PGDATABASE=postgres

fresh_db metrics_values
PORT=$("$MC" freeport)
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; max_attempts = 3;
    backoff = { initial_ms = 20; max_ms = 50; multiplier = 2.0; jitter = 0.0; };" \
    "fail_attempts = 1; permanent_event_type = \"poison\"; unavailable_file = \"$WORK/down\";
     delay_ms = 100; threaded = true;" \
    "metrics = { listen = \"127.0.0.1:$PORT\"; };
routes = ( { event_type = \"order.*\"; output = \"mem\"; destination = \"orders\"; },
           { output = \"mem\"; destination = \"other\"; } );"
init_db "$WORK/relay.cfg"

. "$(dirname "$0")/scrape.sh"
status_of() { get "$1" | head -1; }
# wait_polls N: until the backlog has been polled N more times than now
# (the gauges then describe the table as it was after this call)
wait_polls() {
    local first now i
    scrape "$WORK/p.txt"
    first=$(value "$WORK/p.txt" outbox_relay_backlog_polls_total)
    for ((i = 0; i < 300; i++)); do
        scrape "$WORK/p.txt"
        now=$(value "$WORK/p.txt" outbox_relay_backlog_polls_total)
        [ "$now" -ge $((first + $1)) ] && return 0
        sleep 0.2
    done
    fail "the backlog was not polled $1 more times in 60 s"
}
wait_status() { # wait_status PATH CODE SECONDS
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        [ "$(status_of "$1" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.2
    done
    fail "GET $1 did not answer $2 within $3 s: $(get "$1")"
}

start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID
wait_status /readyz 200 60
expect_eq "GET /healthz" "$(status_of /healthz)" 200
get /healthz | tail -1 | grep -q '"status":"ok"' || fail "healthz body: $(get /healthz)"

# ---- a run, scraped while it goes ----
sql "SELECT count(*) FROM (
       SELECT outbox_enqueue('Order', 'o-' || (g % 40), 'order.created', jsonb_build_object('n', g)) FROM generate_series(1, 400) g
       UNION ALL SELECT outbox_enqueue('User', 'u-' || (g % 10), 'user.created', jsonb_build_object('n', g)) FROM generate_series(1, 50) g
       UNION ALL SELECT outbox_enqueue('Poison', 'p-' || g, 'poison', jsonb_build_object('n', g)) FROM generate_series(1, 10) g) x" >/dev/null
scrape_until "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 \
    "the events were not relayed"
wait_polls 2
scrape "$WORK/after.txt"
check_histograms "$WORK/after.txt"

PUBLISHED=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
DEAD=$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")
ATTEMPTS=$(sql "SELECT sum(attempts) FROM outbox")
expect_eq "rows published" "$PUBLISHED" 450
expect_eq "rows dead" "$DEAD" 10
A=$WORK/after.txt
expect_eq "outbox_relay_published_total" "$(value "$A" outbox_relay_published_total)" "$PUBLISHED"
expect_eq "published{mem}" "$(value "$A" 'outbox_relay_output_published_total{output="mem"}')" "$PUBLISHED"
expect_eq "dead-lettered{mem}" "$(value "$A" 'outbox_relay_output_dead_lettered_total{output="mem"}')" "$DEAD"
expect_eq "outbox_relay_dead_total" "$(value "$A" outbox_relay_dead_total)" "$DEAD"
# every attempt is one decided outcome: published, retried or dead
expect_eq "retried{mem}" "$(value "$A" 'outbox_relay_output_retried_total{output="mem"}')" \
    "$((ATTEMPTS - PUBLISHED - DEAD))"
expect_eq "outbox_relay_retried_total" "$(value "$A" outbox_relay_retried_total)" "$((ATTEMPTS - PUBLISHED - DEAD))"
expect_eq "route 1 published" "$(value "$A" 'outbox_relay_route_published_total{route="1",output="mem"}')" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND event_type LIKE 'order.%'")"
expect_eq "route 2 published" "$(value "$A" 'outbox_relay_route_published_total{route="2",output="mem"}')" 50
expect_eq "route 2 dead-lettered" "$(value "$A" 'outbox_relay_route_dead_lettered_total{route="2",output="mem"}')" 10
expect_eq "route 1 dead-lettered" "$(value "$A" 'outbox_relay_route_dead_lettered_total{route="1",output="mem"}')" 0
expect_eq "in flight{mem}" "$(value "$A" 'outbox_relay_output_in_flight{output="mem"}')" 0
expect_eq "commit-to-ack observations" "$(value "$A" 'outbox_relay_commit_to_ack_seconds_count{output="mem"}')" "$PUBLISHED"
expect_eq "publish duration observations" "$(value "$A" 'outbox_relay_publish_duration_seconds_count{output="mem"}')" "$PUBLISHED"
[ "$(value "$A" 'outbox_relay_statement_duration_seconds_count{statement="claim"}')" -ge 10 ] ||
    fail "fewer claims measured than batches of 50 in 460 events"
[ "$(value "$A" 'outbox_relay_statement_duration_seconds_count{statement="record"}')" -ge 1 ] ||
    fail "no record statement measured (every event failed once)"
expect_eq "pending rows" "$(value "$A" outbox_relay_pending_rows)" 0
expect_eq "dead rows" "$(value "$A" outbox_relay_dead_rows)" "$DEAD"
expect_eq "oldest pending age" "$(value "$A" outbox_relay_oldest_pending_age_seconds)" 0
expect_eq "output up" "$(value "$A" 'outbox_relay_output_up{output="mem"}')" 1

# ---- the output goes down: not ready; pending and lag as SQL has them ----
touch "$WORK/down"
enqueue_bulk 30 5
wait_status /readyz 503 60
get /readyz | tail -1 | grep -q '"output mem: unavailable"' || fail "readyz does not name the output: $(get /readyz)"
expect_eq "GET /healthz while the output is down" "$(status_of /healthz)" 200
# an hour of lag, set where the relay cannot publish it
sql "UPDATE outbox SET created_at = created_at - interval '1 hour' WHERE published_at IS NULL AND dead_at IS NULL" >/dev/null
wait_polls 2
scrape "$WORK/down.txt"
AGE_AFTER=$(sql "SELECT extract(epoch FROM now() - min(created_at)) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL")
expect_eq "pending rows while down" "$(value "$WORK/down.txt" outbox_relay_pending_rows)" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL")"
AGE=$(value "$WORK/down.txt" outbox_relay_oldest_pending_age_seconds)
awk -v a="$AGE" -v b="$AGE_AFTER" 'BEGIN { exit !(a >= 3600 && a <= b) }' ||
    fail "oldest pending age $AGE: want 3600 <= it <= $AGE_AFTER (SQL, read after the scrape)"
expect_eq "output up while down" "$(value "$WORK/down.txt" 'outbox_relay_output_up{output="mem"}')" 0
[ "$(value "$WORK/down.txt" 'outbox_relay_output_deferred_total{output="mem"}')" -ge 1 ] || fail "nothing deferred"
[ "$(value "$WORK/down.txt" 'outbox_relay_output_refused_total{output="mem"}')" -ge 1 ] || fail "nothing refused"
rm -f "$WORK/down"
wait_status /readyz 200 60
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 60

# ---- PostgreSQL stops: not ready, still alive; started again: ready ----
pgm pg-stop >>"$WORK/pg-start.log" 2>&1
wait_status /readyz 503 60
get /readyz | tail -1 | grep -q '"database: ' || fail "readyz does not name the database: $(get /readyz)"
# unauthenticated: libpq's message (host and port) stays in the log
get /readyz | grep -q "$PGM_PORT" && fail "readyz shows the database's port: $(get /readyz)"
expect_eq "GET /healthz while PostgreSQL is down" "$(status_of /healthz)" 200
pgm pg-start >>"$WORK/pg-start.log" 2>&1 || fail "PostgreSQL did not start again"
wait_status /readyz 200 60
enqueue_bulk 20 5
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL" 0 60
wait_polls 1
scrape "$WORK/end.txt"
check_histograms "$WORK/end.txt"
expect_eq "published{mem} at the end" "$(value "$WORK/end.txt" 'outbox_relay_output_published_total{output="mem"}')" \
    "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")"
[ "$(value "$WORK/end.txt" outbox_relay_backlog_poll_failures_total)" -ge 1 ] || fail "no failed poll counted"
# what a client library gives every process, and the build's identity, once
rss=$(value "$WORK/end.txt" process_resident_memory_bytes)
[ "${rss%.*}" -gt 1000000 ] || fail "process_resident_memory_bytes: '$rss'"
[ "$(value "$WORK/end.txt" process_open_fds)" -ge 3 ] || fail "process_open_fds: $(value "$WORK/end.txt" process_open_fds)"
grep -Eq '^outbox_relay_build_info\{version="[0-9]+\.[0-9]+\.[0-9]+",commit="[0-9a-f]+|unknown",abi="[0-9]+\.[0-9]+"\} 1$' "$WORK/end.txt" ||
    fail "no build_info: $(grep build_info "$WORK/end.txt")"
[ "$(grep -c '^process_start_time_seconds ' "$WORK/end.txt")" = 1 ] || fail "process_start_time_seconds not once"
! grep -E '="[^"]* [^"]*"' "$WORK/end.txt" | grep -v '^#' | grep -q . || fail "a label value with a space: $(grep -E '="[^"]* [^"]*"' "$WORK/end.txt" | grep -v '^#' | head -2)"
stop_relay "$RELAY" 60
check_logs_clean
note "$SCRAPES scrapes during the run; lag while down ${AGE}s"
echo "PASS metrics_values"
