/*
 * A lane's rules without a database: the claimed batch is built in memory
 * (claim_result.c), its slots set as the drivers would leave them. A run's
 * rows behind a row that cannot be a message are held back (only those of
 * its aggregate, only when runs are claimed); deciding releases what sits
 * behind a failure of its aggregate with ordering on, and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "claim_result.h"
#include "poll/lane.h"
#include "relay_fixture.h"

typedef struct fixture {
    relay_fixture *rf;
    relay_config *cfg; /* the fixture's, changed by a test */
    delivery d;
    flights fs;
    lane_shared sh;
    lane l;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->rf = relay_fixture_open();
    f->cfg = (relay_config *)f->rf->st.cfg;
    delivery_init(&f->d, &f->rf->st, 0, flight_on_complete, &f->fs);
    flights_init(&f->fs, f->cfg->batch_size, &f->d, "worker 0");
    f->sh = (lane_shared){.st = &f->rf->st, .cfg = f->cfg, .dl = &f->d, .scope = "worker 0"};
    f->sh.run_length = f->cfg->batch_size; /* runs of an aggregate are claimed */
    lane_init(&f->l, &f->sh, &f->fs.lane[0], "jsonb");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    lane_free(&f->l);
    delivery_free(&f->d);
    flights_free(&f->fs);
    relay_fixture_close(f->rf);
    free(f);
    return 0;
}

/* Claims rows of aggregates aggs[i] ("A", "B"...), ids 1, 2, ..., in order. */
static void claim(fixture *f, const char *const *aggs, int n)
{
    static char ids[8][12];
    claim_row rows[8];
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "%d", i + 1);
        rows[i] = claim_row_of(ids[i], "Order", aggs[i], "plain.x");
    }
    batch_take(&f->l.b, claim_result(rows, n));
    assert_int_equal(f->l.b.count, n);
    flight_begin(f->l.flight, n);
    for (int i = 0; i < n; i++) {
        slot *s = &f->l.flight->slots[i];
        s->state = SLOT_AWAITING;
        s->output = OUT_PLAIN;
        s->route = &f->cfg->routes[OUT_PLAIN];
    }
}

static slot *slot_of(fixture *f, int i)
{
    return &f->l.flight->slots[i];
}

/* Slot i as a driver's completion left it. */
static void done(fixture *f, int i, obx_status status)
{
    slot *s = slot_of(f, i);
    s->offered = 1;
    flight_settle(s, SLOT_DONE, status, status == OBX_OK ? "" : "broker said so");
}

static void bad(fixture *f, int i)
{
    slot *s = slot_of(f, i);
    s->route = NULL;
    flight_settle(s, SLOT_BAD, OBX_PERMANENT, "headers: not a JSON object");
}

static void assert_outcomes(fixture *f, const int *want)
{
    for (int i = 0; i < f->l.b.count; i++)
        if (f->l.decisions[i].outcome != want[i])
            fail_msg("row %d: outcome %d, want %d", i + 1, f->l.decisions[i].outcome, want[i]);
}

static void test_hold_behind_a_bad_row(void **state)
{
    fixture *f = *state;
    const char *aggs[] = {"A", "A", "B", "A"};
    claim(f, aggs, 4);
    bad(f, 0);
    lane_hold_behind_bad_rows(&f->l);
    assert_int_equal(slot_of(f, 1)->state, SLOT_ABORTED);
    assert_string_equal(slot_of(f, 1)->detail, "behind an event of its aggregate that failed");
    assert_int_equal(slot_of(f, 2)->state, SLOT_AWAITING); /* another aggregate */
    assert_int_equal(slot_of(f, 3)->state, SLOT_ABORTED);
    assert_int_equal(slot_of(f, 0)->state, SLOT_BAD);

    /* what was held is released unattempted; the bad row is dead */
    done(f, 2, OBX_OK);
    lane_decide(&f->l);
    const int want[] = {OUTCOME_DEAD, OUTCOME_RELEASE, OUTCOME_PUBLISHED, OUTCOME_RELEASE};
    assert_outcomes(f, want);
    assert_string_equal(f->l.decisions[0].error, "headers: not a JSON object");
}

static void test_no_hold_without_runs_or_bad_rows(void **state)
{
    fixture *f = *state;
    const char *aggs[] = {"A", "A", "A"};
    claim(f, aggs, 3);
    done(f, 0, OBX_RETRIABLE); /* a failure, not a bad row: the driver keeps the order */
    lane_hold_behind_bad_rows(&f->l);
    assert_int_equal(slot_of(f, 1)->state, SLOT_AWAITING);
    assert_int_equal(slot_of(f, 2)->state, SLOT_AWAITING);

    f->sh.run_length = 1; /* one event of an aggregate per claim: nothing is behind */
    bad(f, 0);
    lane_hold_behind_bad_rows(&f->l);
    assert_int_equal(slot_of(f, 1)->state, SLOT_AWAITING);
    assert_int_equal(slot_of(f, 2)->state, SLOT_AWAITING);
}

static void test_decide_releases_behind_a_failure(void **state)
{
    fixture *f = *state;
    const char *aggs[] = {"A", "A", "A", "B", "C"};
    claim(f, aggs, 5);
    done(f, 0, OBX_OK);
    done(f, 1, OBX_RETRIABLE);
    done(f, 2, OBX_OK); /* acknowledged, but behind A's failed event */
    done(f, 3, OBX_OK);
    flight_settle(slot_of(f, 4), SLOT_NOT_SENT, OBX_UNAVAILABLE, "its output is paused");
    lane_decide(&f->l);
    const int want[] = {OUTCOME_PUBLISHED, OUTCOME_RETRY, OUTCOME_RELEASE, OUTCOME_PUBLISHED,
                        OUTCOME_DEFER};
    assert_outcomes(f, want);
    assert_int_equal(f->l.decisions[1].delay_ms, 1000);
}

static void test_decide_without_ordering(void **state)
{
    fixture *f = *state;
    f->cfg->ordering = ORDERING_NONE;
    const char *aggs[] = {"A", "A", "A"};
    claim(f, aggs, 3);
    done(f, 0, OBX_RETRIABLE);
    done(f, 1, OBX_OK);
    done(f, 2, OBX_PERMANENT);
    lane_decide(&f->l);
    const int want[] = {OUTCOME_RETRY, OUTCOME_PUBLISHED, OUTCOME_DEAD};
    assert_outcomes(f, want);
}

static void test_decide_gives_up_at_max_attempts(void **state)
{
    fixture *f = *state;
    claim_row rows[2] = {claim_row_of("1", "Order", "A", "plain.x"),
                         claim_row_of("2", "Order", "A", "plain.x")};
    rows[0].v[ROW_ATTEMPTS] = "2"; /* this is its third attempt */
    batch_take(&f->l.b, claim_result(rows, 2));
    flight_begin(f->l.flight, 2);
    for (int i = 0; i < 2; i++) {
        slot_of(f, i)->output = OUT_PLAIN;
        done(f, i, i == 0 ? OBX_RETRIABLE : OBX_OK);
    }
    lane_decide(&f->l);
    const int want[] = {OUTCOME_DEAD, OUTCOME_RELEASE};
    assert_outcomes(f, want);
    assert_string_equal(f->l.decisions[0].error, "gave up after 3 attempts: broker said so");
}

int main(int argc, char **argv)
{
    relay_fixture_driver(argc > 1 ? argv[1] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hold_behind_a_bad_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_hold_without_runs_or_bad_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decide_releases_behind_a_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decide_without_ordering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decide_gives_up_at_max_attempts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
