#!/bin/bash
# A time-partitioned outbox made by init-db and kept by the relay
# (relay.partitions: hourly spans, 3 ahead, keep 2 hours). init-db makes the
# table range-partitioned on created_at with the current hour's partition
# and 3 more, and again changes nothing. Three older hours are attached by
# hand (A, B, C) and 3,000 events of 40 aggregates written across A, B, C
# and now, in id order: all drain, once each, in order per aggregate; one
# in B dies (a permanent refusal). Then one row of C is made pending again
# and the last partition ahead is dropped: the relay's cleanup (on_dead =
# block) makes it again, drops A (all published) and keeps B (a dead row
# that holds its aggregate) and C (a pending row) with every row. Once C's
# row is published, with on_dead = skip, C goes too, and B's dead row is
# moved to the dead-letter table before B goes: status counts it, purge
# sees it, requeue sends it back through the outbox, and it is published. One aggregate's
# inserts into B and into now wait for each other. A detach left
# half done is finished and the partition dropped. init-db
# refuses a table partitioned otherwise for this config.
ENG_TEST=partition_managed
. "$(dirname "$0")/engine_lib.sh"

fresh_db part_managed
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 50; max_attempts = 1;
    partitions = { interval = \"1 hour\"; ahead = 3; keep = \"2 hours\"; };" \
    "permanent_event_type = \"order.poison\";"
write_cfg "$WORK/block.cfg" "workers = 2; batch_size = 50; on_dead = \"block\";
    partitions = { interval = \"1 hour\"; ahead = 3; keep = \"2 hours\"; };" ""
PARTS="SELECT count(*) FROM outbox_partition_bounds('outbox')"
init_db "$WORK/relay.cfg"
expect_eq "outbox partitioned by range of created_at" \
    "$(sql "SELECT pg_get_partkeydef('outbox'::regclass)")" "RANGE (created_at)"
expect_eq "partitions made by init-db (this hour and 3 ahead)" "$(sql "$PARTS")" 4
expect_eq "partitions cover now .. now + 3 hours" \
    "$(sql "SELECT min(lo) <= now() AND max(hi) >= now() + interval '3 hours' FROM outbox_partition_bounds('outbox')")" t
OBJECTS="SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
before=$(sql "$OBJECTS")
init_db "$WORK/relay.cfg"
expect_eq "partitions after init-db again" "$(sql "$PARTS")" 4
expect_eq "relations after init-db again" "$(sql "$OBJECTS")" "$before"

# three older hours, by hand: A (5 hours ago), B (4), C (3); events in id
# order across them (one transaction: one now())
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE format('CREATE TABLE outbox_a PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '5 hours', h - interval '4 hours');
       EXECUTE format('CREATE TABLE outbox_b PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '4 hours', h - interval '3 hours');
       EXECUTE format('CREATE TABLE outbox_c PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '3 hours', h - interval '2 hours');
     END \$\$;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
     SELECT 'Order', 'agg-' || (g % 40), CASE WHEN g = 700 THEN 'order.poison' ELSE 'order.created' END,
            jsonb_build_object('n', g),
            CASE WHEN g <= 1800 THEN date_trunc('hour', now()) - interval '5 hours'
                                     + ((g - 1) / 600) * interval '1 hour' + g * interval '1 second'
                 ELSE clock_timestamp() END
     FROM generate_series(1, 3000) g ORDER BY g" >/dev/null
expect_eq "rows in A/B/C/this hour" \
    "$(sql "SELECT string_agg(n::text, '/' ORDER BY p) FROM (SELECT CASE tableoid::regclass::text
              WHEN 'outbox_a' THEN 1 WHEN 'outbox_b' THEN 2 WHEN 'outbox_c' THEN 3 ELSE 4 END p, count(*) n
            FROM outbox GROUP BY 1) x")" "600/600/600/1200"
expect_eq "ids in created_at order" \
    "$(sql "SELECT count(*) FROM (SELECT id, lag(created_at) OVER (ORDER BY id) < created_at OR lag(created_at) OVER (ORDER BY id) IS NULL AS up FROM outbox) x WHERE NOT up")" 0

drain "$WORK/relay.cfg" "$WORK/drain.log" 180
load_record
expect_eq "published/dead/pending" \
    "$(sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) || '/' || count(*) FILTER (WHERE dead_at IS NOT NULL)
            || '/' || count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL) FROM outbox")" "2999/1/0"
expect_eq "published rows without an ok line" \
    "$(sql "SELECT count(*) FROM outbox o WHERE published_at IS NOT NULL AND NOT EXISTS
              (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
expect_eq "duplicates" "$(dup_count)" 0
check_order
expect_eq "aggregate_seq per aggregate 1..n across partitions" \
    "$(sql "SELECT count(*) FROM (SELECT aggregate_seq, row_number() OVER (PARTITION BY aggregate_id ORDER BY id) AS n
            FROM outbox) x WHERE aggregate_seq <> n")" 0

# C's first row pending again (never due), the last partition ahead gone
sql "UPDATE outbox SET published_at = NULL, available_at = 'infinity'
     WHERE id = (SELECT min(id) FROM outbox_c)" >/dev/null
last=$(sql "SELECT part FROM outbox_partition_bounds('outbox') ORDER BY lo DESC LIMIT 1")
sql "ALTER TABLE outbox DETACH PARTITION $last; DROP TABLE $last"
start_relay "$WORK/block.cfg" "$WORK/keep.log"
wait_sql "SELECT to_regclass('outbox_a') IS NULL" t 60
wait_sql "SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE hi > now()" 4 60
wait_log "$WORK/keep.log" "outbox_b is past keep \(2 hours\) but kept: 0 pending, 1 dead" 60
wait_log "$WORK/keep.log" "outbox_c is past keep \(2 hours\) but kept: 1 pending, 0 dead" 60
stop_relay "$RELAY_PID" 30
grep -q "partitions: dropped 1 fully published partitions older than 2 hours" "$WORK/keep.log" ||
    fail "no drop logged"
grep -q "partitions: made 1 partitions ahead" "$WORK/keep.log" || fail "no partition made ahead logged"
expect_eq "rows of B and C kept, A's gone" \
    "$(sql "SELECT (SELECT count(*) FROM outbox_b) || '/' || (SELECT count(*) FROM outbox_c) || '/' || count(*) FROM outbox")" \
    "600/600/2400"
expect_eq "dead row kept" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 1
expect_eq "pending row kept" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL")" 1

# C's row published: C goes on the next pass; B's dead row is moved to the
# dead-letter table (on_dead = skip), then B goes
sql "UPDATE outbox SET published_at = now() WHERE published_at IS NULL AND dead_at IS NULL" >/dev/null
DEAD="SELECT event_id || '/' || created_at || '/' || attempts || '/' || last_error FROM outbox WHERE dead_at IS NOT NULL"
dead_row=$(sql "$DEAD")
start_relay "$WORK/relay.cfg" "$WORK/drop.log"
wait_sql "SELECT to_regclass('outbox_c') IS NULL AND to_regclass('outbox_b') IS NULL" t 60
stop_relay "$RELAY_PID" 30
grep -q "partitions: moved 1 dead events of public.outbox_b to the dead-letter table" "$WORK/drop.log" ||
    fail "no move logged"
expect_eq "the dead row in the dead-letter table, as it was" \
    "$(sql "SELECT event_id || '/' || created_at || '/' || dl_attempts || '/' || dl_error FROM outbox_dead_letter")" \
    "$dead_row"
expect_eq "dead rows left in the outbox" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "detached tables left behind" \
    "$(sql "SELECT count(*) FROM pg_class WHERE relname IN ('outbox_a', 'outbox_b', 'outbox_c')")" 0
"$OBX_BIN" status -c "$WORK/relay.cfg" >"$WORK/status.out" || fail "status: $(cat "$WORK/status.out")"
grep -Eq "^dead: +1$" "$WORK/status.out" || fail "status does not count the moved dead event: $(cat "$WORK/status.out")"
before=$(sql "$OBJECTS")
init_db "$WORK/relay.cfg"
expect_eq "relations after init-db on a kept table" "$(sql "$OBJECTS")" "$before"

# purge sees it (dry run), and removes only the dead letter it is given
"$OBX_BIN" purge -c "$WORK/relay.cfg" --all --dry-run >"$WORK/purge.out" 2>&1 || fail "purge: $(cat "$WORK/purge.out")"
grep -q "would purge 1 dead events" "$WORK/purge.out" && grep -q "${dead_row%%/*}  order.poison" "$WORK/purge.out" ||
    fail "purge dry run: $(cat "$WORK/purge.out")"
sql "INSERT INTO outbox_dead_letter (event_id, aggregate_type, aggregate_id, event_type, payload, created_at,
       dl_attempts, dl_error, dl_at) VALUES ('00000000-0000-4000-8000-000000000001', 'Order', 'x', 'order.other', '{}',
       now() - interval '1 day', 1, 'by hand', now())" >/dev/null
"$OBX_BIN" purge -c "$WORK/relay.cfg" --id 00000000-0000-4000-8000-000000000001 >"$WORK/purge.out" 2>&1 ||
    fail "purge: $(cat "$WORK/purge.out")"
grep -q "purged 1 dead events" "$WORK/purge.out" || fail "purge: $(cat "$WORK/purge.out")"
expect_eq "dead letters after the purge" "$(sql "SELECT string_agg(event_type, ',') FROM outbox_dead_letter")" order.poison

# requeue sends it back through the outbox (now: its partition is gone), and
# it is published once the driver takes it
"$OBX_BIN" requeue -c "$WORK/relay.cfg" --all >"$WORK/requeue.out" 2>&1 || fail "requeue: $(cat "$WORK/requeue.out")"
grep -q "requeued 1 dead events" "$WORK/requeue.out" || fail "requeue: $(cat "$WORK/requeue.out")"
expect_eq "dead letters left" "$(sql "SELECT count(*) FROM outbox_dead_letter")" 0
write_cfg "$WORK/take.cfg" "workers = 1; partitions = { interval = \"1 hour\"; ahead = 3; keep = \"2 hours\"; };" ""
drain "$WORK/take.cfg" "$WORK/take.log" 60
load_record
expect_eq "the requeued event published" \
    "$(sql "SELECT count(*) FROM outbox o JOIN r USING (event_id) WHERE o.published_at IS NOT NULL
            AND o.event_type = 'order.poison' AND r.status = 'ok' AND o.created_at > now() - interval '10 minutes'")" 1

# B again, by hand, for the next check
sql "DO \$\$ DECLARE h timestamptz := date_trunc('hour', now()); BEGIN
       EXECUTE format('CREATE TABLE outbox_b PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)', h - interval '4 hours', h - interval '3 hours');
     END \$\$" >/dev/null

# one aggregate's inserts into two partitions wait for each other (the order
# trigger locks the root table's key): B's insert commits first, with the lower id and number
sql "CREATE TABLE go (k text)"
session sa "BEGIN; INSERT INTO outbox (aggregate_type, aggregate_id, event_type, created_at)
    SELECT 'Order', 'lock-x', 'order.old', lo + interval '1 minute' FROM outbox_partition_bounds('outbox')
    WHERE part = 'outbox_b'::regclass;
$(wait_go a)
COMMIT;"
SA=$SESSION_PID
wait_in_go sa
session sb "INSERT INTO outbox (aggregate_type, aggregate_id, event_type) VALUES ('Order', 'lock-x', 'order.new');"
SB=$SESSION_PID
wait_blocked sb
sql "INSERT INTO go VALUES ('a')"
wait "$SA" || fail "session sa: $(cat "$WORK/sa.out")"
wait "$SB" || fail "session sb: $(cat "$WORK/sb.out")"
expect_eq "partition/number of lock-x's events in id order" \
    "$(sql "SELECT string_agg(tableoid::regclass::text || ':' || aggregate_seq, ' ' ORDER BY id) FROM outbox WHERE aggregate_id = 'lock-x'")" \
    "outbox_b:1 $(sql "SELECT tableoid::regclass FROM outbox WHERE aggregate_id = 'lock-x' AND event_type = 'order.new'"):2"

# a detach left half done (cancelled while it waited for an older
# transaction) is finished by the relay, and the partition dropped
sql "DO \$\$ BEGIN EXECUTE format('CREATE TABLE outbox_d PARTITION OF outbox FOR VALUES FROM (%L) TO (%L)',
       date_trunc('hour', now()) - interval '6 hours', date_trunc('hour', now()) - interval '5 hours'); END \$\$;
     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, created_at, published_at)
       VALUES ('Order', 'd', 'order.old', date_trunc('hour', now()) - interval '6 hours', now())"
session sd "BEGIN; SELECT count(*) FROM outbox;
$(wait_go d)
COMMIT;"
SD=$SESSION_PID
wait_in_go sd
if PGOPTIONS="$PGOPTIONS -c statement_timeout=3s" psql -qAt -d "$TEST_DB" \
    -c "ALTER TABLE outbox DETACH PARTITION outbox_d CONCURRENTLY" 2>"$WORK/detach.out"; then
    fail "the detach did not wait for the open transaction"
fi
expect_eq "outbox_d pending detach" "$(sql "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'outbox_d'::regclass")" t
sql "INSERT INTO go VALUES ('d')"
wait "$SD" || fail "session sd: $(cat "$WORK/sd.out")"
start_relay "$WORK/relay.cfg" "$WORK/finalize.log"
wait_sql "SELECT to_regclass('outbox_d') IS NULL" t 60
stop_relay "$RELAY_PID" 30

# init-db refuses, for this config, a table partitioned by something else
# (a plain one it converts: partition_convert.sh)
sql "CREATE TABLE by_id (LIKE outbox) PARTITION BY RANGE (id)"
sed "s/conninfo = \"\${TEST_DSN}\";/conninfo = \"\${TEST_DSN}\"; table = \"by_id\";/" \
    "$WORK/relay.cfg" >"$WORK/by_id.cfg"
if "$OBX_BIN" init-db -c "$WORK/by_id.cfg" >"$WORK/by_id.out" 2>&1; then fail "init-db installed into by_id"; fi
grep -q "init-db failed for public.by_id: it is partitioned, but not by range of \"created_at\"" "$WORK/by_id.out" ||
    fail "by_id: $(cat "$WORK/by_id.out")"
check_logs_clean
echo "ok partition_managed: made ahead and again, 3,000 events over 4 partitions drained in order, A dropped, B (dead, on_dead = block) and C (pending) kept until C's row was published, B's dead row moved, requeued and published"
