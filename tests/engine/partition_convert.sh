#!/bin/bash
# init-db turning an existing plain outbox into a partitioned one
# (relay.partitions set on a table init-db made plain). 2,000 events of 20
# aggregates, the first 1,000 published; then init-db with partitions: the
# old table becomes partition outbox_p_before (MINVALUE up to two spans
# from now) with every row, its relay indexes attached rather than built
# again, its grants on the new table, the identity and the per-aggregate
# numbers going on. 500 more events; a drain publishes every pending one
# once, in order per aggregate; init-db again changes nothing. A conversion
# that fails first (the name taken) leaves the plain table as it was.
ENG_TEST=partition_convert
. "$(dirname "$0")/engine_lib.sh"

fresh_db part_convert
write_cfg "$WORK/plain.cfg" "workers = 2; batch_size = 50;" ""
write_cfg "$WORK/parts.cfg" "workers = 2; batch_size = 50;
    partitions = { interval = \"1 hour\"; ahead = 2; keep = \"2 hours\"; };" ""
init_db "$WORK/plain.cfg"
sql "GRANT SELECT ON outbox TO PUBLIC"
enqueue_bulk 1000 20
drain "$WORK/plain.cfg" "$WORK/plain.log" 120
enqueue_bulk 1000 20
max_id=$(sql "SELECT max(id) FROM outbox")

# a conversion that fails (the new name taken) leaves the plain table as it was, without its CHECK
sql "CREATE TABLE outbox_p_before (x int)"
if "$OBX_BIN" init-db -c "$WORK/parts.cfg" >"$WORK/failed.out" 2>&1; then fail "init-db converted onto a taken name"; fi
grep -q 'relation "outbox_p_before" already exists' "$WORK/failed.out" || fail "failed conversion: $(cat "$WORK/failed.out")"
expect_eq "after the failed conversion: kind/bound CHECKs/rows" \
    "$(sql "SELECT c.relkind::text || '/' || (SELECT count(*) FROM pg_constraint WHERE conrelid = c.oid AND contype = 'c')
            || '/' || (SELECT count(*) FROM outbox) FROM pg_class c WHERE c.oid = 'outbox'::regclass")" "r/0/2000"
sql "DROP TABLE outbox_p_before"

init_db "$WORK/parts.cfg"
expect_eq "outbox partitioned by range of created_at" \
    "$(sql "SELECT pg_get_partkeydef('outbox'::regclass)")" "RANGE (created_at)"
expect_eq "rows in outbox_p_before/published there" \
    "$(sql "SELECT count(*) FILTER (WHERE tableoid = 'outbox_p_before'::regclass) || '/' || count(*) FILTER (WHERE published_at IS NOT NULL) FROM outbox")" \
    "2000/1000"
expect_eq "outbox_p_before's range" \
    "$(sql "SELECT lo IS NULL AND hi = date_bin('1 hour', now(), timestamptz '2000-01-03 00:00:00+00') + interval '2 hours'
            FROM outbox_partition_bounds('outbox') WHERE part = 'outbox_p_before'::regclass")" t
# each index of the parent attached to one of outbox_p_before's: the old
# relay indexes and the two made concurrently beforehand, none built again
expect_eq "outbox_p_before's indexes under the parent's" \
    "$(sql "SELECT string_agg(c.relname, ' ' ORDER BY c.relname) FROM pg_inherits h
            JOIN pg_class c ON c.oid = h.inhrelid JOIN pg_index i ON i.indexrelid = c.oid
            WHERE i.indrelid = 'outbox_p_before'::regclass")" \
    "outbox_p_before_aggregate_dead outbox_p_before_aggregate_live outbox_p_before_dead outbox_p_before_event_id outbox_p_before_key outbox_p_before_pending outbox_p_before_published"
expect_eq "indexes of outbox_p_before" \
    "$(sql "SELECT count(*) FROM pg_index WHERE indrelid = 'outbox_p_before'::regclass")" 9
expect_eq "PUBLIC may still read the outbox" "$(sql "SELECT has_table_privilege('public', 'outbox', 'SELECT')")" t
expect_eq "the old table's own triggers left" \
    "$(sql "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'outbox_p_before'::regclass AND tgparentid = 0 AND NOT tgisinternal")" 0
expect_eq "partitions after it (ahead 2: none yet, the current hour is in outbox_p_before)" \
    "$(sql "SELECT count(*) FROM outbox_partition_bounds('outbox') WHERE lo IS NOT NULL")" 1

enqueue_bulk 500 20
expect_eq "ids after the conversion above the old ones" "$(sql "SELECT count(*) FROM outbox WHERE id > $max_id")" 500
drain "$WORK/parts.cfg" "$WORK/parts.log" 120
load_record
# (check_all_published's pgrowlocks reads no partitioned table)
expect_eq "rows not published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
expect_eq "rows without an ok line (both drains record to one file)" \
    "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
expect_eq "duplicates" "$(dup_count)" 0
check_order
expect_eq "aggregate_seq per aggregate 1..n" \
    "$(sql "SELECT count(*) FROM (SELECT aggregate_seq, row_number() OVER (PARTITION BY aggregate_id ORDER BY id) AS n
            FROM outbox) x WHERE aggregate_seq <> n")" 0

OBJECTS="SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
before=$(sql "$OBJECTS")
init_db "$WORK/parts.cfg"
expect_eq "relations after init-db again" "$(sql "$OBJECTS")" "$before"
check_logs_clean
echo "ok partition_convert: a plain outbox of 2,000 rows became partition outbox_p_before with its indexes, grants, ids and numbers; 1,500 pending drained once each, in order"
