#!/bin/bash
# The cursor source split into shards by a hash of aggregate_id (README,
# Cursor mode: shards), going from one reader to two and back:
# 1. One reader relays a backlog. A shard's relay refuses to start before
#    init-db of its config; init-db of two shards starts their rows where the
#    reader finished, and makes the layout's index.
# 2. While the shards read, a reader of the old layout (one reader) refuses
#    to read and publishes nothing.
# 3. Producers commit while both shards run, most transactions spanning
#    both: every event is published once, by its shard's relay, in commit
#    order per aggregate; each shard's status counts its own rows.
# 4. Back to one reader: it starts at the lower of the two shards' places,
#    so it sends again exactly the events between that place and their own
#    shard's, and everything committed since, in order.
WAL_AS=cursor
ENG_TEST=cursorshards
. "$(dirname "$0")/../wal/wal_lib.sh"

fresh_db cursor_shards
write_wal_cfg "$WORK/one.cfg" "" "delay_ms = 1;"
for k in 0 1; do
    write_wal_cfg "$WORK/s$k.cfg" "cursor = { shards = 2; shard = $k; };" "delay_ms = 1;"
done
# place KEY: the cursor row KEY's place as "xid,id" (0: one reader; 2, 3: shards 0, 1 of 2)
place() { sql "SELECT xid || ',' || id FROM outbox_cursor WHERE shard = $1"; }

# --- 1
init_db "$WORK/one.cfg"
enqueue_txns 400 40 20
drain "$WORK/one.cfg" "$WORK/one.log" 60
expect_eq "events the one reader published" "$(ok_events)" 400
ONE_AT=$(place 0)
"$OBX_BIN" run -c "$WORK/s0.cfg" >"$WORK/noinit.out" 2>&1 && fail "a shard without init-db ran"
grep -q "the cursor of shard 0 of 2 of public.outbox is missing: run .outbox-relay init-db" "$WORK/noinit.out" ||
    fail "a shard without init-db: $(cat "$WORK/noinit.out")"
init_db "$WORK/s0.cfg"
init_db "$WORK/s1.cfg"
expect_eq "the shards' rows start where the one reader finished" "$(place 2)/$(place 3)" "$ONE_AT/$ONE_AT"
expect_eq "the layout's index" \
    "$(sql "SELECT count(*) FROM pg_indexes WHERE indexname = 'outbox_cursor_by2' AND indexdef LIKE '%hashtext%& 1%cursor_xid, id)'")" 1

# --- 2
start_relay "$WORK/s0.cfg" "$WORK/s0.log"
PID0=$RELAY_PID
start_relay "$WORK/s1.cfg" "$WORK/s1.log"
PID1=$RELAY_PID
wait_log "$WORK/s0.log" "$STREAMING_LINE" 30
wait_log "$WORK/s1.log" "$STREAMING_LINE" 30
start_relay "$WORK/one.cfg" "$WORK/old.log"
OLD=$RELAY_PID
wait_log "$WORK/old.log" "a relay reads public.outbox with relay.cursor.shards = 2: stop every reader" 30

# --- 3
WRITERS=4 TXNS=30 PER=20 AGGS=60
spanning_writers "$WRITERS" "$TXNS" "$PER" "$AGGS"
TOTAL=$((400 + WRITERS * TXNS * PER))
for ((i = 0; i < 300 && $(ok_events) < TOTAL; i++)); do sleep 0.1; done
expect_eq "events published" "$(ok_events)" "$TOTAL"
for k in 0 1; do
    "$OBX_BIN" status -c "$WORK/s$k.cfg" >"$WORK/status$k.out" || fail "status of shard $k failed"
    grep -q "pending: *0$" "$WORK/status$k.out" || fail "status of shard $k: $(cat "$WORK/status$k.out")"
done
sleep 1 # a duplicate would come now
# the old layout's reader first: once the shards stop it may take over (as
# designed: from the lower shard's place, step 4), sending events again
stop_relay "$OLD" 30
stop_relay "$PID0" 30
stop_relay "$PID1" 30
S0=$(place 2) S1=$(place 3)

load_record
wal_expected
check_wal_published
check_wal_order
expect_eq "ok lines beyond one per event (published twice)" \
    "$(sql "SELECT count(*) - count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 0
expect_eq "events published by the reader of the old layout" "$(sql "SELECT count(*) FROM r WHERE pid = $OLD")" 0
expect_eq "events published by the other shard's relay" \
    "$(sql "SELECT count(*) FROM r JOIN ev USING (event_id) WHERE r.pid IN ($PID0, $PID1)
            AND (hashtext(ev.aggregate_id) & 1) <> CASE r.pid WHEN $PID0 THEN 0 ELSE 1 END")" 0
split=$(sql "SELECT string_agg(n::text, '/' ORDER BY p) FROM (SELECT pid = $PID1 AS p, count(*) n FROM r WHERE pid <> $OLD GROUP BY 1) x")
[[ $split =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]] || fail "both shards publish: $split"

# --- 4
LOW=$(sql "SELECT x FROM (VALUES ('$S0'), ('$S1')) v(x)
           ORDER BY split_part(x, ',', 1)::bigint, split_part(x, ',', 2)::bigint LIMIT 1")
init_db "$WORK/one.cfg"
expect_eq "the one reader's row starts at the lower shard's place" "$(place 0)" "$LOW"
AGAIN=$(sql "SELECT count(*) FROM outbox o WHERE (o.cursor_xid, o.id) > ('${LOW%,*}'::xid8, ${LOW#*,}::bigint)
             AND (o.cursor_xid, o.id) <= CASE hashtext(o.aggregate_id) & 1
                 WHEN 0 THEN ('${S0%,*}'::xid8, ${S0#*,}::bigint) ELSE ('${S1%,*}'::xid8, ${S1#*,}::bigint) END")
enqueue_txns 200 40 20
drain "$WORK/one.cfg" "$WORK/back.log" 60
load_record
wal_expected
check_wal_published
check_wal_order
expect_eq "events sent again: those between the lower place and their shard's" \
    "$(sql "SELECT count(*) - count(DISTINCT event_id) FROM r WHERE status = 'ok'")" "$AGAIN"
check_logs_clean
echo "PASS cursor_shards: $TOTAL events over two shards ($split), once each, in order; one reader refused meanwhile; back to one reader, $AGAIN sent again"
