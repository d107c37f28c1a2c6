#!/bin/bash
# WAL mode crash test: 20,000 events over 100 aggregates in transactions of 100
# (5,000 more whenever fewer are unpublished), the relay (memory driver completing after 20 ms) is
# killed with SIGKILL at random points at least 10 times and restarted; then
# `run --drain`. Must hold: every committed event has an "ok" line, none that
# never committed, first publications in commit order per aggregate. The
# slot replays from the last confirmed commit, so duplicates are expected and
# counted.
ENG_TEST=walcrash
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_crash
write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 20; threaded = true;"
init_db "$WORK/relay.cfg"
enqueue_txns 20000 100


KILLS=0 ROUND=0 TOTAL=20000
RANDOM=$$
while [ "$KILLS" -lt 12 ] && [ "$ROUND" -lt 60 ]; do
    ROUND=$((ROUND + 1))
    start_relay "$WORK/relay.cfg" "$WORK/relay.log"
    sleep "$((RANDOM % 2)).$(printf '%03d' $((RANDOM % 1000)))"
    kill -9 "$RELAY_PID"
    wait "$RELAY_PID" 2>/dev/null || true
    pending=$((TOTAL - $(ok_events)))
    if [ "$pending" -gt 0 ]; then
        KILLS=$((KILLS + 1))
        note "kill $KILLS: $pending unpublished at the kill, slot confirmed at $(slot_confirmed)"
    fi
    if [ "$pending" -lt 5000 ]; then # a fast machine must not run out of work before 12 kills
        enqueue_txns 5000 100
        TOTAL=$((TOTAL + 5000))
    fi
done
[ "$KILLS" -ge 10 ] || fail "only $KILLS kills landed while events were unpublished (need 10)"

drain "$WORK/relay.cfg" "$WORK/drain.log" 180
load_record
wal_expected
expect_eq "committed events" "$(sql "SELECT count(*) FROM ev")" "$TOTAL"
check_wal_published
check_wal_order
check_logs_clean
DUPS=$(dup_count)
echo "PASS wal crash: $KILLS kills, $TOTAL events, duplicates: $DUPS," \
     "ok lines: $(sql "SELECT count(*) FROM r WHERE status = 'ok'")"
