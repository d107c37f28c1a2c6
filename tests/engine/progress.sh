#!/bin/bash
# A long drain says how it goes (issue 49, item 4), once per source
# (SOURCE_MODE=poll|wal|cursor): 30,000 events behind a memory driver slowed
# to at most 1,000 events/s, so the drain takes more than the 10 s between
# lines (and the 5 s between backlog polls) with a margin. The log must hold a line with what is left, the rate and an ETA
# (WAL mode counts its slot's WAL), then the drained line with the count;
# before the backlog and after it, while idle, no progress line at all.
N=30000
# 200 ms per completion: one worker's two lanes of 100, or 200 in WAL and
# cursor mode's window
WAL_OPTS="max_in_flight = 200;"
. "$(dirname "$0")/source_lib.sh" progress
source_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 100;" "delay_ms = 200;"
CFG=$WORK/relay.cfg
LOG=$WORK/relay.log
init_db "$CFG"

# the relay first, so that the backlog appears while it runs
start_relay "$CFG" "$LOG"
# its backlog poller connected (it polls at once): its first sample comes
# before the backlog
wait_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$TEST_DB'
          AND application_name = 'outbox-relay backlog'" 1 60
sleep 1
# the backlog: 30 transactions of 1,000 over 1,000 aggregates (WAL and
# cursor mode confirm whole transactions, so one of 30,000 would not shrink
# the backlog before its end)
sql "DO \$\$ BEGIN FOR t IN 0..29 LOOP
       PERFORM outbox_enqueue('Order', 'a' || g, 'order.created', '{}'::jsonb)
         FROM generate_series(1, 1000) g;
       COMMIT;
     END LOOP; END \$\$" >/dev/null
wait_log "$LOG" "backlog of public.outbox drained" 180
sleep 12 # idle again past an interval
stop_relay "$RELAY_PID" 60
load_record
expect_eq "events published" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" $N

what='[0-9,]+'
[ "$MODE" = wal ] && what='[0-9,]+ [kM]B of WAL'
line="backlog of public\.outbox: $what pending, [0-9,]+ events/s over the last [0-9]+ s, (about ([0-9]+ h )?([0-9]+ min )?[0-9]+ s left|not shrinking)$"
grep -qE "$line" "$LOG" || fail "no progress line in $LOG: $(grep backlog "$LOG")"
# at least one with an ETA: the backlog shrank over an interval (not in WAL
# mode: its slot's lag counts the whole server's WAL, which other tests'
# databases may grow faster than the relay confirms; docs/operations.md)
if [ "$MODE" != wal ]; then
    grep -E "$line" "$LOG" | grep -q " left$" || fail "no ETA: $(grep backlog "$LOG")"
fi
drained="backlog of public\.outbox drained: [0-9,]+ events in ([0-9]+ min )?[0-9]+ s$"
expect_eq "drained lines" "$(grep -cE "$drained" "$LOG")" 1
# the drained line counts this relay's events: all of them (the poller's
# first sample came before the backlog)
grep -qE "drained: 30,000 events in" "$LOG" || fail "drained count: $(grep drained "$LOG")"
# no line before the backlog or after the drained line
expect_eq "backlog lines" "$(grep -c "backlog of public.outbox" "$LOG")" \
    "$(sed -n '/backlog of public.outbox:/,/backlog of public.outbox drained/p' "$LOG" | grep -c "backlog of public.outbox")"
check_logs_clean
echo "PASS progress ($MODE)"
