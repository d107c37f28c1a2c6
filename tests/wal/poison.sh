#!/bin/bash
# WAL mode, a dead letter the table's columns refuse (issue: one bad message
# stopped the slot forever): with accept_logical_messages on, a logical
# message with event_id "zzz" and headers "{bad" among 300 events. It cannot
# become a message (its headers), and its dead-letter row cannot hold it
# (event_id is a uuid): it is stored raw (dl_raw, the typed columns NULL,
# the refusal in dl_error), the 300 are published, and the slot's confirmed
# position passes it. So does a message that is not JSON (nor UTF-8): it is
# dead-lettered with its bytes as hex. `requeue --all` leaves raw rows alone,
# and one without an aggregate_type (which used to fail the whole requeue),
# and counts them.
ENG_TEST=walpoison
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_poison
WAL_OPTS="accept_logical_messages = true;" write_wal_cfg "$WORK/relay.cfg" "" "delay_ms = 1;"
init_db "$WORK/relay.cfg"
enqueue_txns 100 10
sql "SELECT pg_logical_emit_message(true, 'outbox-relay:public.outbox',
       '{\"event_id\": \"zzz\", \"aggregate_type\": \"Order\", \"aggregate_id\": \"p-1\",
         \"event_type\": \"order.poison\", \"payload\": \"{}\", \"headers\": \"{bad\"}')" >/dev/null
# no aggregate_type: dead-lettered typed, with a NULL the outbox refuses
sql "SELECT pg_logical_emit_message(true, 'outbox-relay:public.outbox',
       '{\"event_id\": \"6f0d3d4e-9a55-4a57-9f4e-0c2b7b9c1a01\", \"aggregate_id\": \"p-2\",
         \"event_type\": \"order.poison\", \"payload\": \"{}\"}')" >/dev/null
# not JSON, not UTF-8: never dropped, dead-lettered with every byte (hex, in the payload)
sql "SELECT pg_logical_emit_message(true, 'outbox-relay:public.outbox', '\\x6e6fff7b'::bytea)" >/dev/null
enqueue_txns 200 10
END_LSN=$(sql "SELECT pg_current_wal_lsn()")
drain "$WORK/relay.cfg" "$WORK/relay.log" 120
load_record
wal_expected
check_wal_published
expect_eq "ok lines for the poison message" "$(sql "SELECT count(*) FROM r WHERE aggregate_id = 'p-1'")" 0
expect_eq "dead letters stored raw" "$(sql "SELECT count(*) FROM outbox_dead_letter
    WHERE dl_raw::jsonb->>'event_id' = 'zzz' AND dl_raw::jsonb->>'headers' = '{bad' AND event_id IS NULL
      AND dl_error LIKE 'headers are not valid JSON%its fields are in dl_raw%uuid%'")" 1
expect_eq "unreadable messages dead-lettered with their bytes" "$(sql "SELECT count(*) FROM outbox_dead_letter
    WHERE dl_raw::jsonb->>'payload' = '\\x6e6fff7b' AND dl_error LIKE 'the logical message is not a JSON object%'")" 1
expect_eq "slot confirmed past the poison message" \
    "$(sql "SELECT confirmed_flush_lsn >= '$END_LSN'::pg_lsn FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" t
grep -q "cannot write a dead letter" "$WORK/relay.log" && fail "a dead letter was retried: $(grep -m1 'cannot write a dead letter' "$WORK/relay.log")"
"$OBX_BIN" requeue -c "$WORK/relay.cfg" --all >"$WORK/requeue.out" 2>&1 || fail "requeue --all: $(cat "$WORK/requeue.out")"
grep -q "kept 3 dead events" "$WORK/requeue.out" || fail "requeue --all did not count what it kept: $(cat "$WORK/requeue.out")"
expect_eq "raw dead letters kept by requeue" "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE dl_raw IS NOT NULL")" 2
expect_eq "the dead letter without aggregate_type kept by requeue" \
    "$(sql "SELECT count(*) FROM outbox_dead_letter WHERE aggregate_id = 'p-2' AND aggregate_type IS NULL")" 1
drop_wal_slots
echo "PASS wal poison: a dead letter the columns refused was stored raw; 300 events published, the slot passed it"
