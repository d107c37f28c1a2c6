#!/bin/bash
# Four workers in two processes (2 + 2) on one table, long leases (30 s), no
# crash: no event may be published twice while its lease is valid, so with
# nothing expiring every event has exactly one "ok" line in the broker log.
# Both processes must have published (else nothing was shared).
ENG_TEST=multi
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_multi
write_cfg "$WORK/a.cfg" "workers = 2; batch_size = 100; lease_seconds = 30;" "delay_ms = 5;"
write_cfg "$WORK/b.cfg" "workers = 2; batch_size = 100; lease_seconds = 30;" "delay_ms = 5; threaded = true;"
init_db "$WORK/a.cfg"
enqueue_bulk 20000 500
sql "ANALYZE outbox"

start_two_relays "$WORK/a.cfg" "$WORK/a.log" "$WORK/b.cfg" "$WORK/b.log"
wait_exit "$PID_A" 180
[ "$EXIT_RC" -eq 0 ] || fail "relay A exited $EXIT_RC"
wait_exit "$PID_B" 180
[ "$EXIT_RC" -eq 0 ] || fail "relay B exited $EXIT_RC"

load_record
check_all_published
expect_eq "ok lines" "$(sql "SELECT count(*) FROM r WHERE status = 'ok'")" 20000
expect_eq "events published twice" "$(dup_count)" 0
expect_eq "processes that published" "$(sql "SELECT count(DISTINCT pid) FROM r WHERE status = 'ok'")" 2
check_logs_clean
echo "multi_process: 20000 events, per process: $(sql "SELECT string_agg(n::text, ' + ') FROM (SELECT count(*) n FROM r GROUP BY pid) s")"
echo "PASS multi_process"
