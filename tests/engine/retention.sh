#!/bin/bash
# Retention. "mark": published rows older than retention_hours are deleted by
# the background cleanup (first pass about 5 s after start), in small batches;
# younger published rows, pending rows and dead rows stay. "delete": a
# published row is deleted by the record statement itself; dead rows stay.
ENG_TEST=retention
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_retention
write_cfg "$WORK/mark.cfg" "retention = \"mark\"; retention_hours = 1; max_attempts = 1;" \
    "permanent_event_type = \"order.poison\";"
init_db "$WORK/mark.cfg"
enqueue_bulk 2500 50
sql "SELECT outbox_enqueue('Order', 'p', 'order.poison', '{}')" >/dev/null
"$OBX_BIN" run -c "$WORK/mark.cfg" --drain 2>"$WORK/drain.log" || fail "drain"
expect_eq "published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 2500
# age 2,200 of them past the horizon; 300 stay young
sql "UPDATE outbox SET published_at = now() - interval '2 hours'
     WHERE id IN (SELECT id FROM outbox WHERE published_at IS NOT NULL ORDER BY id LIMIT 2200)" >/dev/null
sql "UPDATE outbox SET dead_at = now() - interval '2 hours' WHERE dead_at IS NOT NULL" >/dev/null
"$OBX_BIN" run -c "$WORK/mark.cfg" 2>"$WORK/mark.log" &
RELAY=$!
ENG_PIDS+=("$RELAY")
for ((i = 0; i < 300; i++)); do
    [ "$(sql "SELECT count(*) FROM outbox")" = 301 ] && break
    sleep 0.2
done
kill -TERM "$RELAY"
wait "$RELAY" || fail "relay exit"
expect_eq "rows left (300 young + 1 dead)" "$(sql "SELECT count(*) FROM outbox")" 301
expect_eq "old published left" "$(sql "SELECT count(*) FROM outbox WHERE published_at < now() - interval '1 hour'")" 0
expect_eq "dead kept" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 1
grep -q "cleanup: deleted 2200 published rows" "$WORK/mark.log" || fail "no cleanup log line"

fresh_db eng_retention
REC=$WORK/delete.jsonl
write_cfg "$WORK/delete.cfg" "retention = \"delete\"; max_attempts = 1; workers = 2;" \
    "permanent_event_type = \"order.poison\";"
init_db "$WORK/delete.cfg"
enqueue_bulk 3000 100
sql "SELECT outbox_enqueue('Order', 'p', 'order.poison', '{}')" >/dev/null
"$OBX_BIN" run -c "$WORK/delete.cfg" --drain 2>"$WORK/delete.log" || fail "drain (delete)"
expect_eq "rows left (the dead one)" "$(sql "SELECT count(*) FROM outbox")" 1
expect_eq "dead kept" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 1
load_record
expect_eq "published by the driver" "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 3000
echo "PASS retention"
