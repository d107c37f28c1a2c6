#!/bin/bash
# WAL mode on a partitioned outbox (relay.partitions, issue 31): init-db
# makes it and publishes it through its root (publish_via_partition_root),
# so inserts into any partition are decoded as the outbox's. Events in the
# current partition, in two later ones (created_at set ahead) and in a past
# one dropped before the relay starts, rows and outbox_emit, 5 transactions
# over 20 aggregates: each published once, in order per aggregate (the
# dropped partition's too: decoding reads the catalog as it was), the
# emitted ones leaving no row. The side thread makes
# partitions ahead: one dropped by hand is made again at start. keep is
# refused in WAL mode with the reason (no row says published there).
ENG_TEST=walparts
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_parts
PARTS='partitions = { interval = "1 hour"; ahead = 3; };'
write_wal_cfg "$WORK/relay.cfg" "$PARTS" ""
init_db "$WORK/relay.cfg"
expect_eq "partitioned" "$(sql "SELECT relkind FROM pg_class WHERE relname = 'outbox'")" p
expect_eq "published through the root" \
    "$(sql "SELECT pubviaroot FROM pg_publication WHERE pubname IN (SELECT pubname FROM pg_publication_tables WHERE tablename = 'outbox')")" t
parts=$(sql "SELECT count(*) FROM pg_inherits WHERE inhparent = 'outbox'::regclass")
[ "$parts" -ge 4 ] || fail "partitions made: $parts, want at least 4 (now and 3 ahead)"

# four transactions: now, now + 1 h, now + 2 h (later partitions), and emitted events
for hours in 0 1 2; do
    sql "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
         SELECT 'Order', 'agg-' || (g % 20), 'order.created', jsonb_build_object('n', g),
                clock_timestamp() + interval '$hours hours'
         FROM generate_series(1, 100) g" >/dev/null
done
# and into a past partition made by hand, dropped below before the relay reads the WAL
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE format('CREATE TABLE outbox_old PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '5 hours', h - interval '4 hours');
     END \$\$;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
     SELECT 'Order', 'agg-' || (g % 20), 'order.created', jsonb_build_object('n', 200000 + g),
            date_trunc('hour', now()) - interval '5 hours' + g * interval '1 second'
     FROM generate_series(1, 100) g" >/dev/null
sql "CREATE TABLE emitted AS SELECT outbox_emit('Order', 'agg-' || (g % 20), 'order.created',
       jsonb_build_object('n', g)) AS event_id, 'agg-' || (g % 20) AS aggregate_id, 100000 + g AS n
     FROM generate_series(1, 50) g" >/dev/null
expect_eq "rows in four partitions" \
    "$(sql "SELECT count(DISTINCT tableoid) FROM outbox")" 4
expect_eq "emitted events left no row" "$(sql "SELECT count(*) FROM outbox")" 400
wal_expected
sql "INSERT INTO ev SELECT event_id, aggregate_id, n FROM emitted"
# the past partition dropped, rows and all: its inserts are in the WAL and decoded all the same
sql "ALTER TABLE outbox DETACH PARTITION outbox_old; DROP TABLE outbox_old"

# the farthest partition ahead, dropped: the relay makes it again
last=$(sql "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'outbox'::regclass ORDER BY c.relname DESC LIMIT 1")
count_rows_in_last=$(sql "SELECT count(*) FROM $last")
expect_eq "rows in the farthest partition" "$count_rows_in_last" 0
sql "DROP TABLE $last"
drain "$WORK/relay.cfg" "$WORK/relay.log" 120
expect_eq "the dropped partition made again" \
    "$(sql "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'outbox'::regclass AND c.relname = '$last'")" 1
load_record
check_wal_published
expect_eq "ok lines (400 rows and 50 emitted)" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 450
check_wal_order
expect_eq "duplicates" "$(dup_count)" 0

# keep: refused in WAL mode, with where and why
write_wal_cfg "$WORK/keep.cfg" 'partitions = { interval = "1 hour"; keep = "2 hours"; };' ""
if "$OBX_BIN" check-config -c "$WORK/keep.cfg" >"$WORK/keep.out" 2>&1; then fail "keep accepted in WAL mode"; fi
grep -q 'relay.partitions.keep needs source = "poll"' "$WORK/keep.out" || { cat "$WORK/keep.out" >&2; fail "no reason for keep"; }
drop_wal_slots
echo "PASS wal_partitions (450 events over four partitions once each, in order, one partition dropped before they were read; a partition ahead made again)"
