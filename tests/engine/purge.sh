#!/bin/bash
# purge in poll mode: the dry run lists what it would remove and removes
# nothing; purge removes exactly the dead rows selected by id, by age, by
# route (the events that route takes first), and never a pending or
# published row, nor one requeued meanwhile. Bad arguments exit 2.
ENG_TEST=purge
. "$(dirname "$0")/engine_lib.sh"

fresh_db obx_purge
ROUTES='routes = ( { event_type = "order.*"; output = "mem"; destination = "o"; },
                   { output = "mem"; destination = "x"; } );'
write_cfg "$WORK/relay.cfg" "" "" "$ROUTES"
init_db "$WORK/relay.cfg"
CFG=$WORK/relay.cfg

# 40 events g = 1..40 (payload), odd g order.created (route 1), even invoice.sent (route 2):
# 1-10 dead 10 days ago, 11-20 dead an hour ago, 21-30 published, 31-40 pending
sql "SELECT count(outbox_enqueue(CASE WHEN g % 2 = 1 THEN 'Order' ELSE 'Invoice' END, 'a' || g,
       CASE WHEN g % 2 = 1 THEN 'order.created' ELSE 'invoice.sent' END, jsonb_build_object('g', g)))
     FROM generate_series(1, 40) g" >/dev/null
G="(payload->>'g')::int"
sql "UPDATE outbox SET dead_at = now() - interval '10 days', attempts = 3, last_error = 'old failure ' || $G WHERE $G <= 10;
     UPDATE outbox SET dead_at = now() - interval '1 hour', attempts = 1, last_error = 'new failure ' || $G WHERE $G BETWEEN 11 AND 20;
     UPDATE outbox SET published_at = now() WHERE $G BETWEEN 21 AND 30" >/dev/null
LIVE_SUM="SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o WHERE dead_at IS NULL"
ALL_SUM="SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o"
live_before=$(sql "$LIVE_SUM")
eid() { sql "SELECT event_id FROM outbox WHERE $G = $1"; }
dead_ids() { sql "SELECT coalesce(string_agg($G::text, ' ' ORDER BY id), '') FROM outbox WHERE dead_at IS NOT NULL"; }

# purge OUT [ARGS...]: must exit 0, output in $WORK/OUT
purge() {
    local out=$1
    shift
    "$OBX_BIN" purge -c "$CFG" "$@" >"$WORK/$out" 2>&1 || fail "purge $* exited $?: $(cat "$WORK/$out")"
}
# refused WANT_TEXT ARGS...: must exit 2 saying WANT_TEXT, the table unchanged
refused() {
    local want=$1 rc=0 before
    shift
    before=$(sql "$ALL_SUM")
    "$OBX_BIN" purge "$@" >"$WORK/refused.out" 2>&1 || rc=$?
    expect_eq "exit code of purge $*" "$rc" 2
    grep -q -- "$want" "$WORK/refused.out" || fail "purge $*: no \"$want\" in: $(cat "$WORK/refused.out")"
    expect_eq "table after the refused purge $*" "$(sql "$ALL_SUM")" "$before"
}

refused "say which dead events" -c "$CFG"
refused "give it alone" -c "$CFG" --all --route 1
refused "has 2 routes" -c "$CFG" --route 3
refused "route's number" -c "$CFG" --route orders
refused '--older-than "ten days" is not a positive interval' -c "$CFG" --older-than 'ten days'
refused '"not-a-uuid" is not an event id' -c "$CFG" --id not-a-uuid
refused "missing -c FILE" --all

# the dry runs list and remove nothing
before=$(sql "$ALL_SUM")
purge dry_all.out --all --dry-run
grep -q "^dry run: would purge 20 dead events" "$WORK/dry_all.out" || fail "dry run --all: $(cat "$WORK/dry_all.out")"
expect_eq "events listed by the dry run" "$(grep -c "last error: " "$WORK/dry_all.out")" 20
grep -q "$(eid 1)  order.created  last error: old failure 1$" "$WORK/dry_all.out" || fail "dry run does not list id 1: $(cat "$WORK/dry_all.out")"
grep -q "$(eid 20)  invoice.sent  last error: new failure 20$" "$WORK/dry_all.out" || fail "dry run does not list id 20"
purge dry_old.out --older-than '1 day' --dry-run
grep -q "^dry run: would purge 10 dead events$" "$WORK/dry_old.out" || fail "dry run --older-than: $(cat "$WORK/dry_old.out")"
purge dry_route.out --route 2 --older-than '1 day' --dry-run
grep -q "^dry run: would purge 5 dead events$" "$WORK/dry_route.out" || fail "dry run --route 2 --older-than: $(cat "$WORK/dry_route.out")"
expect_eq "table after the dry runs" "$(sql "$ALL_SUM")" "$before"

# by id: two dead rows; the ids of a pending and a published row name nothing dead
purge by_id.out --id "$(eid 3)" "$(eid 12)" "$(eid 25)" "$(eid 35)"
grep -q "^purged 2 dead events$" "$WORK/by_id.out" || fail "purge --id: $(cat "$WORK/by_id.out")"
expect_eq "dead rows after purge --id" "$(dead_ids)" "1 2 4 5 6 7 8 9 10 11 13 14 15 16 17 18 19 20"

# by age: the 9 dead for 10 days that are left
purge by_age.out --older-than '1 day'
grep -q "^purged 9 dead events$" "$WORK/by_age.out" || fail "purge --older-than: $(cat "$WORK/by_age.out")"
expect_eq "dead rows after purge --older-than" "$(dead_ids)" "11 13 14 15 16 17 18 19 20"

# a row requeued after the dry run listed it is not removed
purge dry_15.out --id "$(eid 15)" --dry-run
grep -q "would purge 1 dead events" "$WORK/dry_15.out" || fail "dry run --id: $(cat "$WORK/dry_15.out")"
"$OBX_BIN" requeue -c "$CFG" "$(eid 15)" >/dev/null || fail "requeue failed"
purge requeued.out --id "$(eid 15)"
grep -q "^purged 0 dead events$" "$WORK/requeued.out" || fail "purge of a requeued row: $(cat "$WORK/requeued.out")"
expect_eq "the requeued row, pending" "$(sql "SELECT dead_at IS NULL AND published_at IS NULL FROM outbox WHERE $G = 15")" t

# by route: route 1 (order.*) takes the odd ids
purge by_route.out --route 1
grep -q "^purged 4 dead events$" "$WORK/by_route.out" || fail "purge --route 1: $(cat "$WORK/by_route.out")"
expect_eq "dead rows after purge --route 1" "$(dead_ids)" "14 16 18 20"

purge all.out --all
grep -q "^purged 4 dead events$" "$WORK/all.out" || fail "purge --all: $(cat "$WORK/all.out")"
expect_eq "dead rows after purge --all" "$(dead_ids)" ""
expect_eq "rows left: 10 published, 11 pending" \
    "$(sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) || ' ' || count(*) FILTER (WHERE published_at IS NULL) FROM outbox")" "10 11"
expect_eq "pending and published rows untouched (but the requeued one)" \
    "$(sql "SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o WHERE $G <> 15")" "$live_before"
echo "PASS purge (poll): dry runs remove nothing; by id 2, by age 9, requeued 0, by route 4, all 4; pending and published untouched"
