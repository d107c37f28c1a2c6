#!/bin/bash
# A hung broker holds no transaction past relay.max_transaction_ms (issue 29).
# The memory driver plays a broker that is connected and never answers while
# $WORK/hang exists: it takes every message and completes none. For 15 s:
# the relay's sessions are sampled in pg_stat_activity (no transaction older
# than the bound of 1 s, with a margin for a busy machine: the old relay held
# one until its driver was re-created, 5 leases), a bystander table's dead
# rows, made while a batch was in flight, are all removable by VACUUM, and
# /metrics shows the age of the oldest transaction. Then the broker answers
# again: every event published, none dead, no attempt counted for the hang
# (max_attempts = 2 would have dead-lettered them), order kept; the
# duplicates (what the hung broker held, sent again) are counted and bounded
# by what was in flight.
ENG_TEST=hung_broker
. "$(dirname "$0")/engine_lib.sh"

N=400
BATCH=50
WORKERS=2
BOUND_MS=1000
fresh_db eng_hung_broker
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_cfg "$WORK/relay.cfg" "workers = $WORKERS; batch_size = $BATCH; max_attempts = 2;
    max_transaction_ms = $BOUND_MS;
    backoff = { initial_ms = 10; max_ms = 20; multiplier = 2.0; jitter = 0.0; };" \
    "hang_file = \"$WORK/hang\";" "metrics = { listen = \"127.0.0.1:$PORT\"; };"
scrape() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3); }
init_db "$WORK/relay.cfg"
bystander_make
enqueue_bulk $N 40
touch "$WORK/hang"

start_relay "$WORK/relay.cfg" "$WORK/relay.log" --drain
PID=$RELAY_PID
hang_watch 15
METRIC=$(scrape | sed -n 's/^outbox_relay_oldest_transaction_age_seconds //p')
DURING=$(sql "SELECT count(*) FILTER (WHERE dead_at IS NOT NULL) || '/' || coalesce(max(attempts), 0) FROM outbox")
rm -f "$WORK/hang"
wait_exit "$PID" 120
expect_eq "relay exit code" "$EXIT_RC" 0

check_hang_bounded $BOUND_MS
[ -n "$METRIC" ] || fail "/metrics has no outbox_relay_oldest_transaction_age_seconds"
expect_eq "while hung: dead rows / max attempts" "$DURING" "0/0"

load_record
check_all_published
check_order
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "attempts per event" "$(sql "SELECT string_agg(DISTINCT attempts::text, ',') FROM outbox")" 1
DUPS=$(dup_count)
note "duplicates: $DUPS (what the hung broker held and delivered once it answered)"
[ "$DUPS" -le $((WORKERS * 2 * BATCH)) ] || fail "$DUPS duplicates: more than was in flight"
grep -q "its driver answered every message it held" "$WORK/relay.log" ||
    fail "the output did not wait for its driver to answer what it held"
check_logs_clean
echo "PASS hung_broker"
