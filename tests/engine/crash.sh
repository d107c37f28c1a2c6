#!/bin/bash
# Crash test: 20,000 events over 500 aggregates (5,000 more whenever fewer
# are pending); the relay (2 workers, memory driver completing after 20 ms)
# is killed with SIGKILL at random points at least 10 times and restarted
# each time; then `run --drain`.
# Must hold: every committed event is published and has an "ok" line in the
# broker log; nothing is published that is not in the table. Duplicates are
# allowed (ack-then-crash window, expired leases) and are counted and printed;
# a consumer with the inbox (init-db --inbox), fed every delivery in order,
# accepts each event once and turns every duplicate away.
ENG_TEST=crash
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_crash
# short lease: rows of a killed relay come back quickly
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; lease_seconds = 2;" \
    "delay_ms = 20; threaded = true;"
init_db "$WORK/relay.cfg"
enqueue_bulk 20000 500
sql "ANALYZE outbox"

KILLS=0 KILLS_IN_FLIGHT=0 ROUND=0 TOTAL=20000
RANDOM=$$
while [ "$KILLS" -lt 12 ] && [ "$ROUND" -lt 60 ]; do
    ROUND=$((ROUND + 1))
    start_relay "$WORK/relay.cfg" "$WORK/relay.log"
    # a random point 150..950 ms after start (startup itself is part of the space)
    sleep "0.$(printf '%03d' $((150 + RANDOM % 800)))"
    pending=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")
    leased=$(sql "$HELD_SQL")
    kill -9 "$RELAY_PID"
    wait "$RELAY_PID" 2>/dev/null || true
    [ "$pending" -gt 0 ] || break
    KILLS=$((KILLS + 1))
    [ "$leased" -gt 0 ] && KILLS_IN_FLIGHT=$((KILLS_IN_FLIGHT + 1))
    note "kill $KILLS: $pending pending, $leased leased at the kill"
    if [ "$pending" -lt 10000 ]; then # a fast relay must not run out of work before 12 kills
        enqueue_bulk 10000 500
        TOTAL=$((TOTAL + 10000))
    fi
done
[ "$KILLS" -ge 10 ] || fail "only $KILLS kills landed while rows were pending (need 10)"
[ "$KILLS_IN_FLIGHT" -ge 5 ] || fail "only $KILLS_IN_FLIGHT kills hit a relay holding leases"

drain "$WORK/relay.cfg" "$WORK/drain.log" 120
load_record
check_all_published
expect_eq "committed rows" "$(sql "SELECT count(*) FROM outbox")" "$TOTAL"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
check_logs_clean
DUPS=$(dup_count)
# a consumer with the inbox, fed every delivery as it came: it accepts each
# event once and turns away every duplicate the kills caused
"$OBX_BIN" init-db -c "$WORK/relay.cfg" --inbox >/dev/null || fail "init-db --inbox"
expect_eq "inbox: accepted/turned away" \
    "$(sql "CREATE TEMP TABLE seen (fresh boolean);
            DO \$\$ DECLARE d record; BEGIN
              FOR d IN SELECT event_id FROM r WHERE status = 'ok' ORDER BY line LOOP
                INSERT INTO seen VALUES (outbox_inbox_accept('crash-consumer', d.event_id));
              END LOOP; END \$\$;
            SELECT count(*) FILTER (WHERE fresh) || '/' || count(*) FILTER (WHERE NOT fresh) FROM seen")" \
    "$TOTAL/$DUPS"
echo "crash: $KILLS kills ($KILLS_IN_FLIGHT with leases held), $TOTAL events, duplicates: $DUPS," \
     "ok lines: $(sql "SELECT count(*) FROM r WHERE status = 'ok'")," \
     "other lines: $(sql "SELECT count(*) FROM r WHERE status <> 'ok'")"
echo "PASS crash (the inbox turned away all $DUPS duplicates)"
