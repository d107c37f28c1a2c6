#!/bin/bash
# purge in WAL mode: the dead-letter table's rows, by id, age and route, the
# dry run removing nothing; the outbox table's rows are never touched, a
# dead letter requeued after a dry run listed it is not removed, one stored
# raw (no event_id) goes only with --older-than or --all.
ENG_TEST=walpurge
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db wal_purge
ROUTES='routes = ( { event_type = "order.*"; output = "mem"; destination = "o"; },
                   { output = "mem"; destination = "x"; } );'
write_wal_cfg "$WORK/relay.cfg" "" "" "$ROUTES"
init_db "$WORK/relay.cfg"
CFG=$WORK/relay.cfg
DL=outbox_dead_letter

# the outbox keeps 10 rows; 20 dead letters g = 1..20 (odd g order.created,
# route 1; even invoice.sent), 1-10 dead 10 days ago, 11-20 an hour ago; and
# one stored raw, 10 days ago
sql "SELECT count(outbox_enqueue('Order', 'k' || g, 'order.created', jsonb_build_object('g', g)))
     FROM generate_series(1, 10) g" >/dev/null
sql "INSERT INTO $DL (event_id, aggregate_type, aggregate_id, event_type, payload, created_at,
       dl_attempts, dl_error, dl_at, dl_commit_lsn)
     SELECT gen_random_uuid(), CASE WHEN g % 2 = 1 THEN 'Order' ELSE 'Invoice' END, 'a' || g,
       CASE WHEN g % 2 = 1 THEN 'order.created' ELSE 'invoice.sent' END, jsonb_build_object('g', g),
       now(), 1, 'failure ' || g, now() - CASE WHEN g <= 10 THEN interval '10 days' ELSE interval '1 hour' END, '0/0'
     FROM generate_series(1, 20) g;
     INSERT INTO $DL (dl_attempts, dl_error, dl_at, dl_commit_lsn, dl_raw)
     VALUES (1, 'stored raw', now() - interval '10 days', '0/0', '{\"event_id\": \"zzz\"}')" >/dev/null
OUTBOX_SUM="SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o"
DL_SUM="SELECT md5(string_agg(d::text, ',' ORDER BY dl_error)) FROM $DL d"
outbox_before=$(sql "$OUTBOX_SUM")
G="(payload->>'g')::int"
eid() { sql "SELECT event_id FROM $DL WHERE $G = $1"; }
dead_left() { sql "SELECT coalesce(string_agg(coalesce($G::text, 'raw'), ' ' ORDER BY $G), '') FROM $DL"; }
purge() {
    local out=$1
    shift
    "$OBX_BIN" purge -c "$CFG" "$@" >"$WORK/$out" 2>&1 || fail "purge $* exited $?: $(cat "$WORK/$out")"
}

rc=0
"$OBX_BIN" purge -c "$CFG" --older-than soon >"$WORK/bad.out" 2>&1 || rc=$?
expect_eq "exit code of a bad interval" "$rc" 2
grep -q -- '--older-than "soon" is not a positive interval' "$WORK/bad.out" || fail "bad interval: $(cat "$WORK/bad.out")"

before=$(sql "$DL_SUM")
purge dry_all.out --all --dry-run
grep -q "^dry run: would purge 21 dead events (the first 20 below)$" "$WORK/dry_all.out" || fail "dry run --all: $(cat "$WORK/dry_all.out")"
grep -q "(stored raw)  -  last error: stored raw" "$WORK/dry_all.out" || fail "dry run does not list the raw dead letter"
grep -q "$(eid 12)  invoice.sent  last error: failure 12$" "$WORK/dry_all.out" || fail "dry run does not list g 12"
purge dry_route.out --route 1 --dry-run
grep -q "^dry run: would purge 10 dead events$" "$WORK/dry_route.out" || fail "dry run --route 1: $(cat "$WORK/dry_route.out")"
expect_eq "dead letters after the dry runs" "$(sql "$DL_SUM")" "$before"

purge by_id.out --id "$(eid 4)" "$(eid 13)" "$(sql "SELECT event_id FROM outbox LIMIT 1")"
grep -q "^purged 2 dead events$" "$WORK/by_id.out" || fail "purge --id: $(cat "$WORK/by_id.out")"
expect_eq "left after purge --id" "$(dead_left)" "1 2 3 5 6 7 8 9 10 11 12 14 15 16 17 18 19 20 raw"

# a dead letter requeued after a dry run listed it is not removed
purge dry_15.out --id "$(eid 15)" --dry-run
grep -q "would purge 1 dead events" "$WORK/dry_15.out" || fail "dry run --id: $(cat "$WORK/dry_15.out")"
E15=$(eid 15)
"$OBX_BIN" requeue -c "$CFG" "$E15" >/dev/null || fail "requeue failed"
purge requeued.out --id "$E15"
grep -q "^purged 0 dead events$" "$WORK/requeued.out" || fail "purge of a requeued event: $(cat "$WORK/requeued.out")"
expect_eq "the requeued event, in the outbox" "$(sql "SELECT count(*) FROM outbox WHERE event_id = '$E15'")" 1

purge by_route.out --route 2
grep -q "^purged 9 dead events$" "$WORK/by_route.out" || fail "purge --route 2: $(cat "$WORK/by_route.out")"
expect_eq "left after purge --route 2" "$(dead_left)" "1 3 5 7 9 11 17 19 raw"

purge by_age.out --older-than '1 day'
grep -q "^purged 6 dead events$" "$WORK/by_age.out" || fail "purge --older-than: $(cat "$WORK/by_age.out")"
expect_eq "left after purge --older-than" "$(dead_left)" "11 17 19"

purge all.out --all
grep -q "^purged 3 dead events$" "$WORK/all.out" || fail "purge --all: $(cat "$WORK/all.out")"
expect_eq "dead letters left" "$(dead_left)" ""
expect_eq "outbox rows untouched (the requeued one aside)" \
    "$(sql "SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o WHERE event_id <> '$E15'")" "$outbox_before"
drop_wal_slots
echo "PASS purge (wal): dry runs remove nothing; by id 2, requeued 0, by route 9, by age 6 (raw included), all 3; outbox untouched"
