#!/bin/bash
# One bad text cannot hold a batch (issue 11: an error text cut inside a
# UTF-8 character made the record statement fail for the whole batch, every
# lease period, forever). A batch of 10 in one claim: 8 events of 8
# aggregates, and aggregate X's two events, the first with a 141-character
# non-ASCII event type that matches no route (routes only take "order.*").
# That row is dead-lettered with a readable UTF-8 error naming the event
# type; the other 9 are published exactly once, each claimed once (X's
# second after the first is dead, on_dead = skip).
ENG_TEST=bad_text
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_bad_text
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 10;" "" \
    'routes = ( { event_type = "order.*"; output = "mem"; destination = "orders"; } );'
init_db "$WORK/relay.cfg"
# 141 characters, 352 bytes: two- and three-byte characters, so a cut at a byte count splits one
BAD_TYPE=$(sql "SELECT repeat('é€', 70) || 'ü'")
expect_eq "bad event type: characters/bytes" "$(sql "SELECT length('$BAD_TYPE') || '/' || octet_length('$BAD_TYPE')")" "141/352"
sql "SELECT count(outbox_enqueue('Order', a, t, jsonb_build_object('n', n)))
     FROM (VALUES (1, 'g1', 'order.created'), (2, 'g2', 'order.created'), (3, 'g3', 'order.created'),
                  (4, 'g4', 'order.created'), (5, 'X', '$BAD_TYPE'), (6, 'X', 'order.created'),
                  (7, 'g5', 'order.created'), (8, 'g6', 'order.created'), (9, 'g7', 'order.created'),
                  (10, 'g8', 'order.created')) v(n, a, t)" >/dev/null
drain "$WORK/relay.cfg" "$WORK/relay.log" 120

load_record
BAD="FROM outbox WHERE event_type = '$BAD_TYPE'"
LAST_ERROR=$(sql "SELECT last_error $BAD")
note "last_error ($(sql "SELECT length(last_error) || ' characters, ' || octet_length(last_error) $BAD") bytes): $LAST_ERROR"
expect_eq "bad row: dead" "$(sql "SELECT dead_at IS NOT NULL AND published_at IS NULL $BAD")" t
expect_eq "bad row: last_error names the failure and the event type" \
    "$(sql "SELECT last_error LIKE 'no route matches event_type \"é€é€é€é€é€é€é€é€é€é€%' $BAD")" t
printf '%s' "$LAST_ERROR" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 || fail "last_error is not valid UTF-8"
# X's second event must not reach the broker in the claim where its head failed
expect_eq "ok lines of X's second event (behind the dead row, in the same claim)" \
    "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.aggregate_id = 'X' AND r.status = 'ok'")" 1
expect_eq "other rows: published, once each, one attempt" \
    "$(sql "SELECT count(*) FROM outbox o WHERE event_type = 'order.created' AND published_at IS NOT NULL
            AND attempts = 1 AND (SELECT count(*) FROM r WHERE r.event_id = o.event_id AND r.status = 'ok') = 1")" 9
expect_eq "broker log lines" "$(sql "SELECT count(*) FROM r")" 9
expect_eq "exit line: claimed/published/dead/released" \
    "$(for s in claimed published dead released; do printf '%s/' "$(relay_stat "$WORK/relay.log" $s)"; done)" "11/9/1/1/"
check_logs_clean
echo "PASS bad_text"
