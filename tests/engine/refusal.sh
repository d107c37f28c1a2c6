#!/bin/bash
# A message the driver refuses at publish, with a reason of its own
# (memory driver refuse_event_type: refused RETRIABLE), costs an attempt each
# time: with max_attempts = 3 it ends dead with the reason in last_error
# (issue 11: refusals never ended). One claim holds it, an event of its own
# aggregate behind it and 8 events of other aggregates: those 9 are each
# published exactly once, the follower after the refused event is dead
# (on_dead = skip), and the refused event never reaches the broker's log.
ENG_TEST=refusal
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_refusal
write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 10; max_attempts = 3;
    backoff = { initial_ms = 10; max_ms = 20; multiplier = 2.0; jitter = 0.0; };" \
    "refuse_event_type = \"order.refused\";"
init_db "$WORK/relay.cfg"
sql "SELECT count(outbox_enqueue('Order', a, t, jsonb_build_object('n', n)))
     FROM (VALUES (1, 'a1', 'order.created'), (2, 'a2', 'order.created'), (3, 'R', 'order.refused'),
                  (4, 'R', 'order.created'), (5, 'a3', 'order.created'), (6, 'a4', 'order.created'),
                  (7, 'a5', 'order.created'), (8, 'a6', 'order.created'), (9, 'a7', 'order.created'),
                  (10, 'a8', 'order.created')) v(n, a, t)" >/dev/null
drain "$WORK/relay.cfg" "$WORK/relay.log" 120

load_record
REFUSED="FROM outbox WHERE event_type = 'order.refused'"
note "refused event: attempts $(sql "SELECT attempts $REFUSED"), last_error: $(sql "SELECT last_error $REFUSED")"
expect_eq "refused event: dead after 3 attempts" "$(sql "SELECT (dead_at IS NOT NULL AND published_at IS NULL) || '/' || attempts $REFUSED")" "true/3"
expect_eq "refused event: its reason in last_error" \
    "$(sql "SELECT last_error LIKE 'gave up after 3 attempts, refused: refuse_event_type: this event type is refused%' $REFUSED")" t
expect_eq "refused event: broker log lines" "$(sql "SELECT count(*) FROM r JOIN outbox o USING (event_id) WHERE o.event_type = 'order.refused'")" 0
expect_eq "other events: published, once each, one attempt" \
    "$(sql "SELECT count(*) FROM outbox o WHERE event_type <> 'order.refused' AND published_at IS NOT NULL
            AND attempts = 1 AND (SELECT count(*) FROM r WHERE r.event_id = o.event_id AND r.status = 'ok') = 1")" 9
expect_eq "broker log lines" "$(sql "SELECT count(*) FROM r")" 9
expect_eq "R's follower published after its head was dead" \
    "$(sql "SELECT (SELECT published_at FROM outbox WHERE aggregate_id = 'R' AND event_type = 'order.created')
            >= (SELECT dead_at $REFUSED)")" t
expect_eq "exit line: published/retried/dead" \
    "$(relay_stat "$WORK/relay.log" published)/$(relay_stat "$WORK/relay.log" retried)/$(relay_stat "$WORK/relay.log" dead)" "9/2/1"
check_logs_clean
echo "PASS refusal"
