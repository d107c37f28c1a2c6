#!/bin/bash
# outbox_enqueue's p_deliver_after, in poll mode or (argument "wal") WAL
# mode, with the memory driver as the broker: of 30 aggregates, 20 have a
# second event delayed 3 s between two that are not (in WAL mode the delayed
# one of every other aggregate through outbox_emit). No attempt of a delayed
# event is recorded before its available_at (the broker's clock is this
# machine's, as the database's), each is published after it, and the event
# behind it waits for it (per-aggregate order).
MODE=${1:-poll}
ENG_TEST=deliver_after_$MODE
if [ "$MODE" = wal ]; then . "$(dirname "$0")/../wal/wal_lib.sh"; else . "$(dirname "$0")/engine_lib.sh"; fi

fresh_db "eng_after_$MODE"
if [ "$MODE" = wal ]; then
    wal_drop_slots "$TEST_DB" || true
    write_wal_cfg "$WORK/relay.cfg" "batch_size = 50;" ""
else
    write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50;" ""
fi
init_db "$WORK/relay.cfg"
sql "CREATE TABLE delayed (event_id uuid, aggregate_id text, due timestamptz)"
emit=outbox_enqueue
[ "$MODE" = wal ] && emit=outbox_emit
sql "DO \$\$ DECLARE e uuid; BEGIN FOR a IN 1..30 LOOP
       PERFORM outbox_enqueue('Order', 'agg-' || a, 'order.first', '{}');
       IF a <= 20 THEN
         IF a % 2 = 0 THEN
           e := $emit('Order', 'agg-' || a, 'order.later', '{}', p_deliver_after => interval '3 seconds');
         ELSE
           e := outbox_enqueue('Order', 'agg-' || a, 'order.later', '{}', p_deliver_after => interval '3 seconds');
         END IF;
         INSERT INTO delayed VALUES (e, 'agg-' || a, now() + interval '3 seconds');
       END IF;
       PERFORM outbox_enqueue('Order', 'agg-' || a, 'order.third', '{}');
     END LOOP; END \$\$"
drain "$WORK/relay.cfg" "$WORK/relay.log" 60
load_record

expect_eq "delayed events published" "$(sql "SELECT count(DISTINCT r.event_id) FROM r JOIN delayed USING (event_id) WHERE status = 'ok'")" 20
expect_eq "attempts of a delayed event before it was due" \
    "$(sql "SELECT count(*) FROM r JOIN delayed USING (event_id) WHERE r.t_us < extract(epoch FROM delayed.due) * 1000000")" 0
if [ "$MODE" = poll ]; then
    expect_eq "attempts before the row's available_at" \
        "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE r.t_us < extract(epoch FROM o.available_at) * 1000000")" 0
fi
expect_eq "third events attempted before their aggregate's delayed one was published" \
    "$(sql "SELECT count(*) FROM r t JOIN outbox o ON o.event_id = t.event_id AND o.event_type = 'order.third'
            JOIN delayed d ON d.aggregate_id = o.aggregate_id
            WHERE t.line < (SELECT min(line) FROM r WHERE r.event_id = d.event_id AND status = 'ok')")" 0
expect_eq "events not published" \
    "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = o.event_id AND status = 'ok')")" 0
[ "$MODE" = wal ] && drop_wal_slots
echo "PASS deliver_after $MODE (20 events delayed 3 s: none attempted before due, each published after it, the events behind them in order)"
