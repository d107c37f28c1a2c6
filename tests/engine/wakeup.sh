#!/bin/bash
# LISTEN/NOTIFY wake-up (SOURCE_MODE poll or cursor): with the fallback poll
# at a minute, events committed while the relay waits are published within
# seconds, one commit at a time. Without the outbox's notify trigger they
# would wait for the next poll, a minute away: the test fails then (drop the
# trigger <table>_notify after init-db to see it).
MODE=${SOURCE_MODE:?SOURCE_MODE must be poll or cursor}
ENG_TEST=wakeup_$MODE
if [ "$MODE" = cursor ]; then # on a PostgreSQL of its own, as every cursor test (wal_lib.sh)
    export WAL_AS=cursor
    . "$(dirname "$0")/../wal/wal_lib.sh"
else
    . "$(dirname "$0")/engine_lib.sh"
fi

N=20
fresh_db "eng_wakeup_$MODE"
src=""
[ "$MODE" = cursor ] && src='source = "cursor";'
write_cfg "$WORK/relay.cfg" "workers = 1; poll_interval_ms = 60000; $src" ""
init_db "$WORK/relay.cfg"
enqueue() { sql "SELECT outbox_enqueue('Order', 'agg-$1', 'order.created', '{\"n\": $1}')" >/dev/null; }

enqueue 0 # seen by the first read, after which the relay waits for a NOTIFY or a minute
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
wait_distinct "$REC" 1 30
sleep 1 # the relay has found nothing more and waits
started=$SECONDS
for ((i = 1; i <= N; i++)); do
    enqueue "$i" # one transaction each: each commit notifies
    sleep 0.2
done
# the next fallback poll is over 50 s away: all of them within 20 s is the wake-up
wait_distinct "$REC" $((N + 1)) 20
took=$((SECONDS - started))
stop_relay "$RELAY_PID" 30
check_logs_clean
echo "PASS wakeup ($MODE): $N events committed one at a time over 4 s all published by $took s, with a 60 s fallback poll"
