#!/bin/bash
# The consumer inbox (init-db --inbox): outbox_inbox_accept(consumer, event_id)
# is true the first time and false for a duplicate, in the caller's
# transaction. Shown four ways: the plain answers (per consumer, undone by a
# rollback); two transactions accepting one event at once (the second waits
# for the first: false after its COMMIT, true after its ROLLBACK); the prune;
# and a consumer applying a relayed stream with duplicates (a third of the
# events published again) and failing handlers (every 7th delivery rolls back
# and is delivered again) through the README's few lines of SQL: its effects
# table, which has no key of its own, ends with each event exactly once.
ENG_TEST=inbox
. "$(dirname "$0")/engine_lib.sh"

N=500
fresh_db eng_inbox
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 100;" ""
"$OBX_BIN" init-db -c "$WORK/relay.cfg" --inbox >"$WORK/init.out" || fail "init-db --inbox failed"
grep -q 'consumer inbox ready: "public".outbox_inbox_accept' "$WORK/init.out" ||
    fail "init-db --inbox did not say where the inbox is: $(cat "$WORK/init.out")"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" --inbox >/dev/null || fail "init-db --inbox is not idempotent"

accept() { sql "SELECT outbox_inbox_accept('$1', '$2')"; }
X=00000000-0000-0000-0000-00000000000a
expect_eq "first accept" "$(accept billing $X)" t
expect_eq "second accept" "$(accept billing $X)" f
expect_eq "another consumer's first accept" "$(accept shipping $X)" t
Y=00000000-0000-0000-0000-00000000000b
sql "BEGIN; SELECT outbox_inbox_accept('billing', '$Y'); ROLLBACK" >/dev/null
expect_eq "accept after a rolled-back accept" "$(accept billing $Y)" t

sql "CREATE TABLE go (k text)"
race() { # race END: A accepts and holds its transaction; B accepts meanwhile; A ends with END
    local id
    id=$(sql "SELECT gen_random_uuid()")
    session obx_sess_a "BEGIN; SELECT outbox_inbox_accept('race', '$id'); $(wait_go "$1"); $1;"
    wait_in_go obx_sess_a
    session obx_sess_b "SELECT outbox_inbox_accept('race', '$id');"
    local b=$SESSION_PID
    wait_blocked obx_sess_b
    sql "INSERT INTO go VALUES ('$1')"
    wait "$b" || fail "session B failed: $(cat "$WORK/obx_sess_b.out")"
    expect_eq "A's accept ($1)" "$(head -1 "$WORK/obx_sess_a.out")" t
    expect_eq "B's accept while A was open, after A's $1" "$(cat "$WORK/obx_sess_b.out")" "$2"
}
race COMMIT f
race ROLLBACK t

sql "UPDATE outbox_inbox SET accepted_at = now() - interval '10 days' WHERE consumer = 'shipping'"
expect_eq "rows pruned" "$(sql "SELECT outbox_inbox_prune(interval '7 days')")" 1
expect_eq "rows kept by the prune" "$(sql "SELECT count(*) FROM outbox_inbox WHERE consumer = 'billing'")" 2

# a relayed stream, a third of it published twice
enqueue_bulk $N 20
drain "$WORK/relay.cfg" "$WORK/relay1.log"
sql "UPDATE outbox SET published_at = NULL WHERE id % 3 = 0" >/dev/null
drain "$WORK/relay.cfg" "$WORK/relay2.log"
load_record
DELIVERIES=$(sql "SELECT count(*) FROM r WHERE status = 'ok'")
DUPS=$(dup_count)
[ "$DUPS" -gt 0 ] || fail "the stream has no duplicate to recognise"

# the consumer: the README's block around its handler (an INSERT into
# effects); a failed handler rolls back, and the broker delivers again
sql "CREATE TABLE effects (event_id uuid NOT NULL, applied_at timestamptz DEFAULT now())"
block() { # block EVENT_ID END: one delivery, handled in one transaction ended by END
    printf '%s\n' "BEGIN;" "SELECT outbox_inbox_accept('billing', '$1') AS fresh \\gset" '\if :fresh' \
        "INSERT INTO effects (event_id) VALUES ('$1');" '\endif' "$2;"
}
sql "SELECT line, event_id FROM r WHERE status = 'ok' ORDER BY line" | tr '|' ' ' |
    while read -r line id; do
        if ((line % 7 == 0)); then block "$id" ROLLBACK; fi
        block "$id" COMMIT
    done >"$WORK/consumer.sql"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f "$WORK/consumer.sql" >/dev/null 2>"$WORK/consumer.log" ||
    fail "the consumer's script failed: $(head -3 "$WORK/consumer.log")"
expect_eq "effects" "$(sql "SELECT count(*) FROM effects")" $N
expect_eq "events applied twice" "$(sql "SELECT count(*) - count(DISTINCT event_id) FROM effects")" 0
expect_eq "events never applied" \
    "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM effects e WHERE e.event_id = o.event_id)")" 0
ROLLED=$(sql "SELECT count(*) FROM r WHERE status = 'ok' AND line % 7 = 0")
echo "PASS inbox ($N events, $DELIVERIES deliveries with $DUPS duplicates and $ROLLED failed handlers: each applied once)"
