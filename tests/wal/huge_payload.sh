#!/bin/bash
# WAL mode, a row whose text form the walsender cannot send (issue 29): a
# jsonb of 180 MB of control characters (each printed \u0001: about 1.1 GB
# as text, a few MB stored). pgoutput sends every column as text, so the
# walsender failed on it, and the stream replayed that transaction forever:
# nothing after it was published. The outbox now refuses such a row at
# insert, with the reason, whichever way it comes (outbox_enqueue, and so
# outbox_emit, which inserts too; an INSERT copying a compressed value from
# another table), and
# the 100 events around it are published, the slot confirmed past them.
# A payload over max_payload_bytes that the stream can carry is dead-lettered
# by the relay with its size, as in poll mode.
ENG_TEST=walhuge
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_huge
write_wal_cfg "$WORK/relay.cfg" "max_payload_bytes = 1048576;" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
HUGE="jsonb_build_object('pad', repeat(chr(1), 180 * 1024 * 1024))"
enqueue_txns 50 10

# refused_at_insert WHAT SQL: SQL fails with the guard's reason.
refused_at_insert() {
    local out
    out=$(psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "$2" 2>&1) && fail "$1: the huge row was accepted"
    note "$1: $out"
    case "$out" in
    *"outbox row too large for WAL mode"*"512 MB"*) ;;
    *) fail "$1: refused without the reason: $out" ;;
    esac
}
refused_at_insert outbox_enqueue "SELECT outbox_enqueue('Order', 'agg-3', 'order.huge', $HUGE)"
# stored compressed in a table of the application's, copied in as it is
sql "CREATE TABLE staging AS SELECT $HUGE AS payload" >/dev/null
note "staged value: $(sql "SELECT pg_size_pretty(pg_column_size(payload)::bigint) || ' stored' FROM staging")"
refused_at_insert "INSERT ... SELECT" "INSERT INTO outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
    SELECT gen_random_uuid(), 'Order', 'agg-3', 'order.huge', payload FROM staging"

# over max_payload_bytes but sendable: dead-lettered by the relay
sql "SELECT outbox_enqueue('Order', 'agg-4', 'order.big', jsonb_build_object('pad', repeat('x', 2 * 1024 * 1024)))" >/dev/null
enqueue_txns 50 10
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
drain "$WORK/relay.cfg" "$WORK/relay.log" 120
load_record
sql "DROP TABLE IF EXISTS ev; CREATE TABLE ev AS SELECT event_id, aggregate_id, id AS n FROM outbox WHERE event_type = 'order.created'"
check_wal_published
expect_eq "huge rows in the outbox" "$(sql "SELECT count(*) FROM outbox WHERE event_type = 'order.huge'")" 0
DL=$(sql "SELECT dl_error FROM outbox_dead_letter WHERE event_type = 'order.big'")
expect_eq "the big payload's dead letter" "$DL" "payload of 2097163 bytes exceeds max_payload_bytes (1048576)"
expect_eq "slot confirmed past every event" \
    "$(sql "SELECT confirmed_flush_lsn >= '$END_LSN'::pg_lsn FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" t
grep -qiE "out of memory|alloc request" "$WORK/relay.log" && fail "the stream failed: $(grep -iE -m1 'out of memory|alloc request' "$WORK/relay.log")"
drop_wal_slots
echo "PASS wal huge payload: rows the stream cannot carry refused at insert (2 ways), 100 events published, the big one dead-lettered"
