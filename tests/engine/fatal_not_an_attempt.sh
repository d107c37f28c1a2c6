#!/bin/bash
# Bug reproduction: messages refused because the driver instance went FATAL
# were never sent, yet they count as an attempt, so a flapping driver
# dead-letters events that no broker ever saw ("gave up after 1 attempts:
# refused by the driver at publish" here with max_attempts = 1; the same
# happens with any max_attempts after enough re-creations). The issue says a
# FATAL driver's rows "are retried, not lost": they must not burn attempts.
# Round 2: the messages in flight when the instance fails (completed 300 ms
# after publish, from the driver's thread) are completed "aborted" by the
# close that re-creates it: the host closed it, no broker judged them, so
# they count no attempt either (they used to: 50 dead, "gave up after 1
# attempts: aborted").
ENG_TEST=fatalattempt
. "$(dirname "$0")/engine_lib.sh"

for round in refused in_flight; do
    fresh_db eng_fatalattempt
    extra=""
    [ $round = in_flight ] && extra="delay_ms = 300; threaded = true;"
    write_cfg "$WORK/relay.cfg" "workers = 1; batch_size = 100; max_attempts = 1;" "fatal_after = 50; $extra"
    init_db "$WORK/relay.cfg"
    sql "SELECT count(outbox_enqueue('Order', 'a' || g, 'order.created', '{}')) FROM generate_series(1, 100) g" >/dev/null
    : >"$REC"
    drain "$WORK/relay.cfg" "$WORK/relay.log" 120
    load_record
    DEAD=$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")
    echo "fatal_not_an_attempt ($round): dead: $DEAD ($(sql "SELECT min(last_error) FROM outbox WHERE dead_at IS NOT NULL"))"
    expect_eq "events dead-lettered without ever reaching the broker ($round)" "$DEAD" 0
    check_all_published
done
echo "PASS fatal_not_an_attempt"
