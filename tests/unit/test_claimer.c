/*
 * What one claim tells the next: where the ordered walk starts again and
 * how many heads it takes. The claim results are built in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "claim_result.h"
#include "poll/claimer.h"

static relay_config cfg_of(int batch, ordering_mode ordering)
{
    relay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.batch_size = batch;
    cfg.max_payload_bytes = 1000;
    cfg.max_batch_mb = 32;
    cfg.ordering = ordering;
    return cfg;
}

/* An ordered claim of `rows` rows whose walk took `heads` heads and ended
 * at aggregate A/last. */
static void advance(claimer *k, int rows, int heads, const char *last)
{
    static claim_row r[64];
    static char ids[64][16];
    char heads_text[16];
    snprintf(heads_text, sizeof heads_text, "%d", heads);
    for (int i = 0; i < rows; i++) {
        snprintf(ids[i], sizeof ids[i], "%d", i + 1);
        r[i] = claim_row_of(ids[i], "A", ids[i], "e");
        r[i].v[ROW_AFTER_TYPE] = "A";
        r[i].v[ROW_AFTER_ID] = last;
        r[i].v[ROW_HEADS] = heads_text;
    }
    PGresult *res = claim_result(r, rows);
    claimer_advance(k, res);
    PQclear(res);
}

static int heads_param(claimer *k)
{
    const char *p[CLAIM_PARAMS];
    assert_int_equal(claimer_params(k, p), CLAIM_PARAMS);
    return atoi(p[CLAIM_HEADS]);
}

static void test_walk_starts_after_the_last_aggregate(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(10, ORDERING_AGGREGATE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 10);
    const char *p[CLAIM_PARAMS];
    claimer_params(&k, p);
    assert_null(p[CLAIM_AFTER_TYPE]); /* the first walk starts at the first aggregate */
    advance(&k, 3, 3, "7");
    claimer_params(&k, p);
    assert_string_equal(p[CLAIM_AFTER_TYPE], "A");
    assert_string_equal(p[CLAIM_AFTER_ID], "7");
    assert_string_equal(p[CLAIM_BATCH], "10");
    assert_string_equal(p[CLAIM_RUN], "10");
    advance(&k, 0, 0, NULL); /* an empty claim: from the first again */
    claimer_params(&k, p);
    assert_null(p[CLAIM_AFTER_TYPE]);
    claimer_free(&k);
}

static void test_heads_follow_the_runs(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(40, ORDERING_AGGREGATE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 40);
    assert_int_equal(heads_param(&k), 40); /* at first, every head */
    advance(&k, 40, 40, "x");              /* runs filled the batch: half the heads */
    assert_int_equal(heads_param(&k), 20);
    advance(&k, 40, 20, "x");
    assert_int_equal(heads_param(&k), 10);
    advance(&k, 30, 10, "x"); /* runs of 3: 14 heads would fill 40 */
    assert_int_equal(heads_param(&k), 40 * 10 / 30 + 1);
    int before = heads_param(&k);
    advance(&k, 5, 5, "x"); /* fewer heads than allowed: every due head taken, nothing learned */
    assert_int_equal(heads_param(&k), before);
    for (int i = 0; i < 16; i++) { /* after a batch short of full, full ones for a while */
        advance(&k, 40, before, "x");
        assert_int_equal(heads_param(&k), before);
    }
    advance(&k, 40, before, "x"); /* then fewer heads are tried again */
    assert_int_equal(heads_param(&k), before / 2);
    for (int i = 0; i < 10; i++) /* never below one */
        advance(&k, 40, heads_param(&k), "x");
    assert_int_equal(heads_param(&k), 1);
    claimer_free(&k);
}

/* A batch filled by runs behind fewer heads than the limit: half those
 * heads next, the rest left to the other workers. */
static void test_full_runs_behind_few_heads_leave_heads_to_others(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(40, ORDERING_AGGREGATE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 40);
    advance(&k, 40, 10, "x"); /* 10 aggregates, runs of 4 */
    assert_int_equal(heads_param(&k), 5);
    advance(&k, 40, 5, "x");
    assert_int_equal(heads_param(&k), 2);
    advance(&k, 30, 2, "x"); /* the runs ran out: grow back to fill the batch */
    assert_int_equal(heads_param(&k), 40 * 2 / 30 + 1);
    claimer_free(&k);
}

static void test_one_event_per_aggregate_takes_whole_batches(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(40, ORDERING_AGGREGATE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 1); /* a driver that does not keep order */
    advance(&k, 40, 40, "x");
    assert_int_equal(heads_param(&k), 40);
    claimer_configure(&k, &cfg, 4); /* a reload to an in-order driver: a floor of 10 */
    for (int i = 0; i < 5; i++)
        advance(&k, 40, heads_param(&k), "x");
    assert_int_equal(heads_param(&k), 10);
    claimer_free(&k);
}

static void test_single_events_cost_one_half_batch_in_seventeen(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(40, ORDERING_AGGREGATE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 40);
    int full = 0, claims = 0;
    for (int i = 0; i < 34; i++, claims++) { /* every aggregate holds one event */
        int heads = heads_param(&k);
        full += heads == 40;
        advance(&k, heads, heads, "x");
    }
    assert_int_equal(claims - full, 2); /* the first halving and one more, 17 claims later */
    claimer_free(&k);
}

/* An unordered claim starts after the last row of a full claim; from the
 * first row after a claim that was not full, and every 8th claim. */
static void test_unordered_claims_start_after_a_full_claim(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(10, ORDERING_NONE);
    claimer k = {0};
    claimer_configure(&k, &cfg, 1);
    const char *p[CLAIM_PARAMS];
    assert_int_equal(claimer_params(&k, p), CLAIM_PARAMS_UNORDERED);
    assert_null(p[CLAIM_AFTER_ROW]);
    advance(&k, 3, 3, "7"); /* not full */
    claimer_params(&k, p);
    assert_null(p[CLAIM_AFTER_ROW]);
    int from_first = 0;
    for (int i = 0; i < 16; i++) {
        advance(&k, 10, 10, "x"); /* full: rows 1..10 */
        claimer_params(&k, p);
        if (p[CLAIM_AFTER_ROW])
            assert_string_equal(p[CLAIM_AFTER_ROW], "10");
        else
            from_first++;
    }
    assert_int_equal(from_first, 2);
    advance(&k, 0, 0, "x"); /* nothing found */
    claimer_params(&k, p);
    assert_null(p[CLAIM_AFTER_ROW]);
    claimer_free(&k);
}

/* A claim asks for about max_batch_mb of rows of the last claim's size, so
 * that the rows past the budget are not sized for nothing; small rows
 * again: the whole batch. */
static void test_large_rows_ask_for_what_fits_the_budget(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(500, ORDERING_NONE);
    cfg.max_batch_mb = 1;
    claimer k = {0};
    claimer_configure(&k, &cfg, 1);
    const char *p[CLAIM_PARAMS];
    claimer_params(&k, p);
    assert_string_equal(p[CLAIM_BATCH], "500"); /* nothing known yet */
    static char big[100 * 1024];
    memset(big, 'x', sizeof big - 1);
    claim_row r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = claim_row_of("1", "A", "1", "e");
        r[i].v[ROW_PAYLOAD] = big;
    }
    PGresult *res = claim_result(r, 3);
    claimer_advance(&k, res);
    PQclear(res);
    claimer_params(&k, p);
    assert_string_equal(p[CLAIM_BATCH], "11"); /* 1 MiB of 100 kB rows, and one more */
    advance(&k, 11, 11, "x"); /* rows of a few bytes */
    claimer_params(&k, p);
    assert_string_equal(p[CLAIM_BATCH], "500");
    claimer_free(&k);
}

/* Workers sharing a place start after the furthest row any of them took,
 * each from the first row after its own claim that was not full. */
static void test_workers_share_the_furthest_place(void **state)
{
    (void)state;
    relay_config cfg = cfg_of(10, ORDERING_NONE);
    atomic_llong place = 0;
    claimer a = {0}, b = {0};
    claimer_configure(&a, &cfg, 1);
    claimer_configure(&b, &cfg, 1);
    claimer_share_place(&a, &place);
    claimer_share_place(&b, &place);
    const char *p[CLAIM_PARAMS];
    advance(&a, 10, 10, "x"); /* rows 1..10 */
    advance(&b, 5, 5, "x");   /* not full */
    claimer_params(&a, p);
    assert_string_equal(p[CLAIM_AFTER_ROW], "10");
    claimer_params(&b, p);
    assert_null(p[CLAIM_AFTER_ROW]);
    place = 30; /* a third worker took rows up to 30 */
    claimer_params(&a, p);
    assert_string_equal(p[CLAIM_AFTER_ROW], "30");
    advance(&a, 10, 10, "x"); /* rows 1..10 again: the place stays the furthest */
    assert_int_equal(place, 30);
    claimer_free(&a);
    claimer_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_starts_after_the_last_aggregate),
        cmocka_unit_test(test_heads_follow_the_runs),
        cmocka_unit_test(test_full_runs_behind_few_heads_leave_heads_to_others),
        cmocka_unit_test(test_one_event_per_aggregate_takes_whole_batches),
        cmocka_unit_test(test_single_events_cost_one_half_batch_in_seventeen),
        cmocka_unit_test(test_unordered_claims_start_after_a_full_claim),
        cmocka_unit_test(test_workers_share_the_furthest_place),
        cmocka_unit_test(test_large_rows_ask_for_what_fits_the_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
