#!/bin/bash
# The cursor source on a partitioned outbox (relay.partitions: hourly, keep
# 2 hours), in two shards: a partition past keep is dropped whole once both
# shards' cursors have passed every row of it, never before.
# Two older hours are attached by hand, A (5 hours ago) and B (4), and 1,800
# events of 40 aggregates written across A, B and now; one more event in B
# is refused by the broker on every attempt (a retriable failure). Both
# shards relay the rest (but the later events of its aggregate, in order
# behind it); A is dropped, B is kept with every row, since one
# shard is not past its stuck event, though the other shard is past all of
# B. Relays whose broker takes it: the event is published and B is
# dropped. Every event is published, in order per aggregate, and sent twice
# only if the stuck shard had published it past its cursor; the current
# partition and those ahead stay.
WAL_AS=cursor
ENG_TEST=cursorparts
. "$(dirname "$0")/../wal/wal_lib.sh"

fresh_db cursor_parts
PARTS='partitions = { interval = "1 hour"; ahead = 3; keep = "2 hours"; };'
for k in 0 1; do
    # batches of 100: the cursor moves past whole reads, and A must be
    # behind the read that holds the stuck event
    write_wal_cfg "$WORK/stuck$k.cfg" "$PARTS cursor = { shards = 2; shard = $k; }; batch_size = 100; max_attempts = 100000;
        backoff = { initial_ms = 20; max_ms = 50; };" "delay_ms = 1; retriable_event_type = \"order.stuck\";"
    write_wal_cfg "$WORK/fixed$k.cfg" "$PARTS cursor = { shards = 2; shard = $k; };" "delay_ms = 1;"
    init_db "$WORK/stuck$k.cfg"
done
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE format('CREATE TABLE outbox_a PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '5 hours', h - interval '4 hours');
       EXECUTE format('CREATE TABLE outbox_b PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '4 hours', h - interval '3 hours');
     END \$\$;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
     SELECT 'Order', 'agg-' || (g % 40), CASE WHEN g = 1000 THEN 'order.stuck' ELSE 'order.created' END,
            jsonb_build_object('n', g),
            CASE WHEN g <= 1200 THEN date_trunc('hour', now()) - interval '5 hours'
                                     + ((g - 1) / 600) * interval '1 hour' + g * interval '1 second'
                 ELSE clock_timestamp() END
     FROM generate_series(1, 1801) g ORDER BY g" >/dev/null
expect_eq "rows in A/B/now" \
    "$(sql "SELECT string_agg(n::text, '/' ORDER BY p) FROM (SELECT CASE tableoid::regclass::text
              WHEN 'outbox_a' THEN 1 WHEN 'outbox_b' THEN 2 ELSE 3 END p, count(*) n FROM outbox GROUP BY 1) x")" "600/600/601"
STUCK_SHARD=$(sql "SELECT hashtext(aggregate_id) & 1 FROM outbox WHERE event_type = 'order.stuck'")
OTHER=$((1 - STUCK_SHARD))
expect_eq "rows of B in the other shard" "$(sql "SELECT count(*) > 0 FROM outbox_b WHERE hashtext(aggregate_id) & 1 = $OTHER")" t
AHEAD=$(sql "SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE hi > now()")
wal_expected

start_relay "$WORK/stuck0.cfg" "$WORK/stuck0.log"
PID0=$RELAY_PID
start_relay "$WORK/stuck1.cfg" "$WORK/stuck1.log"
PID1=$RELAY_PID
# all but the stuck event (g = 1000, agg-0) and the 20 later ones of its aggregate
for ((i = 0; i < 600 && $(ok_events) < 1780; i++)); do sleep 0.1; done
expect_eq "events published but the stuck one and those behind it" "$(ok_events)" 1780
wait_sql "SELECT to_regclass('outbox_a') IS NULL" t 60
# the other shard is past all of B; B stays while the stuck shard is not
wait_sql "SELECT bool_and((o.cursor_xid, o.id) <= (c.xid, c.id)) FROM outbox_b o, outbox_cursor c
          WHERE hashtext(o.aggregate_id) & 1 = $OTHER AND c.shard = 2 + $OTHER" t 30
sleep 5 # two retention passes (every 2 s) in each relay
expect_eq "B's rows, kept" "$(sql "SELECT count(*) FROM outbox_b")" 600
expect_eq "B open to new rows" "$(sql "SELECT count(*) FROM pg_constraint WHERE conname = 'outbox_relay_retired'")" 0
stop_relay "$PID0" 30
stop_relay "$PID1" 30
# the stuck shard's cursor stays below its stuck event: what that shard
# published past it is read and sent again (at least once)
load_record
AGAIN=$(sql "SELECT count(DISTINCT r.event_id) FROM r JOIN outbox o USING (event_id), outbox_cursor c
             WHERE r.status = 'ok' AND c.shard = 2 + $STUCK_SHARD AND hashtext(o.aggregate_id) & 1 = $STUCK_SHARD
               AND (o.cursor_xid, o.id) > (c.xid, c.id)")
[ "$AGAIN" -gt 0 ] || fail "nothing published past the stuck event"

start_relay "$WORK/fixed0.cfg" "$WORK/fixed0.log"
PID0=$RELAY_PID
start_relay "$WORK/fixed1.cfg" "$WORK/fixed1.log"
PID1=$RELAY_PID
for ((i = 0; i < 300 && $(ok_events) < 1801; i++)); do sleep 0.1; done
wait_sql "SELECT to_regclass('outbox_b') IS NULL" t 60
stop_relay "$PID0" 30
stop_relay "$PID1" 30
grep -qh "partitions: dropped 1 relayed partitions older than 2 hours" "$WORK"/stuck*.log ||
    fail "A's drop not logged"
expect_eq "partitions now and ahead" "$(sql "SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE hi > now()")" "$AHEAD"
expect_eq "rows left (now's)" "$(sql "SELECT count(*) FROM outbox")" 601
expect_eq "detached tables left behind" "$(sql "SELECT count(*) FROM pg_class WHERE relname IN ('outbox_a', 'outbox_b')")" 0

load_record
check_wal_published
check_wal_order
expect_eq "ok lines beyond one per event" "$(sql "SELECT count(*) - count(DISTINCT event_id) FROM r WHERE status = 'ok'")" "$AGAIN"
check_logs_clean
echo "PASS cursor_partitions: A dropped once both shards passed it, B kept while one shard's event was stuck, then dropped; 1,801 events, in order, $AGAIN sent again from behind the stuck one"
