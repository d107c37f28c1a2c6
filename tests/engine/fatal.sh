#!/bin/bash
# FATAL: the memory driver goes fatal after 300 accepted messages (every
# instance). The engine must close and re-create the instance (logged) and
# lose nothing: every event published, none dead, each with an "ok" line.
ENG_TEST=fatal
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_fatal
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 100; lease_seconds = 30; max_attempts = 10;
    backoff = { initial_ms = 50; max_ms = 1000; multiplier = 2.0; jitter = 0.2; };" \
    "fatal_after = 300; delay_ms = 5;"
init_db "$WORK/relay.cfg"
enqueue_bulk 3000 300
sql "ANALYZE outbox"
drain "$WORK/relay.cfg" "$WORK/relay.log" 170
load_record
check_all_published
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
RECREATED=$(grep -c "driver instance re-created" "$WORK/relay.log" || true)
FAILED=$(grep -c "driver instance failed; re-creating" "$WORK/relay.log" || true)
# 3000 messages at 300 per instance: at least 3000/300 - 2 (initial instances) re-creations
[ "$RECREATED" -ge 8 ] || fail "only $RECREATED re-creations logged (want >= 8)"
[ "$FAILED" -ge "$RECREATED" ] || fail "re-created $RECREATED but only $FAILED failures logged"
check_logs_clean
echo "fatal: $RECREATED re-creations, max attempts $(sql "SELECT max(attempts) FROM outbox")," \
     "duplicates: $(dup_count)"
echo "PASS fatal"
