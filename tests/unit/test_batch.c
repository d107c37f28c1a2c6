/*
 * A claimed batch: rows taken from the claim result in id order, which
 * rows sit behind an unpublished event of their aggregate. The claim result
 * is built in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "claim_result.h"
#include "poll/batch.h"

/* The batch of rows[0..n), taken as the worker takes a claim. */
static void take(batch *b, const claim_row *rows, int n)
{
    batch_init(b, n);
    batch_take(b, claim_result(rows, n));
    assert_int_equal(b->count, n);
}

/* The batch index of the row with outbox id `id`. */
static int index_of(const batch *b, long long id)
{
    for (int i = 0; i < b->count; i++)
        if (b->rows[i].id == id)
            return i;
    fail_msg("no row with id %lld", id);
    return -1;
}

static void test_rows_sorted_by_id_and_parsed(void **state)
{
    (void)state;
    claim_row rows[3] = {claim_row_of("30", "Order", "1", "created"),
                         claim_row_of("4", "User", "u", "renamed"),
                         claim_row_of("200", "Order", "2", "paid")};
    rows[0].v[ROW_ATTEMPTS] = "2";
    rows[0].v[ROW_PAYLOAD_BYTES] = "2000000";
    batch b;
    take(&b, rows, 3);
    assert_int_equal(b.rows[0].id, 4);
    assert_int_equal(b.rows[1].id, 30);
    assert_int_equal(b.rows[2].id, 200);
    const batch_row *r = &b.rows[1];
    assert_int_equal(r->res_row, 0); /* still finds its claim row */
    assert_string_equal(r->id_text, "30");
    assert_string_equal(r->event_id, "30");
    assert_string_equal(r->aggregate_type, "Order");
    assert_string_equal(r->aggregate_id, "1");
    assert_int_equal(r->attempt, 3); /* attempts so far + this one */
    assert_int_equal(r->payload_bytes, 2000000);
    assert_int_equal(b.rows[0].attempt, 1);
    assert_int_equal(b.rows[0].payload_bytes, -1); /* NULL: not measured */
    assert_true(batch_has(&b, 4) && batch_has(&b, 30) && batch_has(&b, 200));
    assert_false(batch_has(&b, 5) || batch_has(&b, 3) || batch_has(&b, 201));
    batch_free(&b);
}

/*
 * Two aggregates interleaved, out of id order in the claim: Order/1 fails
 * at its 2nd event, so its 3rd is held; Order/2 is unaffected.
 */
static void test_after_failure_per_aggregate(void **state)
{
    (void)state;
    claim_row rows[] = {
        claim_row_of("5", "Order", "1", "c"), claim_row_of("1", "Order", "1", "a"),
        claim_row_of("2", "Order", "2", "a"), claim_row_of("3", "Order", "1", "b"),
        claim_row_of("4", "Order", "2", "b"), claim_row_of("6", "Order", "2", "c"),
    };
    batch b;
    take(&b, rows, 6);
    int published[6], after[6];
    for (int i = 0; i < 6; i++)
        published[i] = b.rows[i].id != 3;
    memset(after, 0x5a, sizeof after);
    batch_after_failure(&b, published, after);
    static const int want_after[] = {0, 0, 0, 0, 1, 0}; /* by id 1..6 */
    for (long long id = 1; id <= 6; id++)
        assert_int_equal(after[index_of(&b, id)], want_after[id - 1]);
    batch_free(&b);
}

/* Once held, every later event of the aggregate is held, published or not. */
static void test_after_failure_holds_the_rest(void **state)
{
    (void)state;
    claim_row rows[] = {claim_row_of("1", "A", "x", "e"), claim_row_of("2", "A", "x", "e"),
                        claim_row_of("3", "A", "x", "e"), claim_row_of("4", "A", "x", "e")};
    batch b;
    take(&b, rows, 4);
    int published[4] = {0, 1, 0, 1}, after[4];
    batch_after_failure(&b, published, after);
    assert_int_equal(after[0], 0); /* the failing one is decided on its own verdict */
    assert_int_equal(after[1], 1);
    assert_int_equal(after[2], 1);
    assert_int_equal(after[3], 1);
    for (int i = 0; i < 4; i++)
        published[i] = 1;
    batch_after_failure(&b, published, after);
    for (int i = 0; i < 4; i++)
        assert_int_equal(after[i], 0);
    batch_free(&b);
}

/* An aggregate is the pair (type, id): neither alone, nor their concatenation. */
static void test_aggregate_is_type_and_id(void **state)
{
    (void)state;
    claim_row rows[] = {claim_row_of("1", "ab", "c", "e"), claim_row_of("2", "a", "bc", "e"),
                        claim_row_of("3", "User", "1", "e"), claim_row_of("4", "Order", "1", "e"),
                        claim_row_of("5", "ab", "c", "e")};
    batch b;
    take(&b, rows, 5);
    int published[5] = {0, 1, 0, 1, 1}, after[5];
    batch_after_failure(&b, published, after);
    static const int want_after[] = {0, 0, 0, 0, 1}; /* only ab/c's second event */
    for (int i = 0; i < 5; i++)
        assert_int_equal(after[i], want_after[i]);
    batch_free(&b);
}

/* A run that holds an event waiting for its retry is cut there: that event
 * and the rest of its aggregate are dropped; other aggregates keep theirs. */
static void test_run_cut_at_an_event_not_due(void **state)
{
    (void)state;
    claim_row rows[] = {claim_row_of("1", "A", "x", "e"), claim_row_of("3", "A", "x", "e"),
                        claim_row_of("2", "B", "y", "e"), claim_row_of("4", "A", "x", "e"),
                        claim_row_of("5", "B", "y", "e"), claim_row_of("6", "A", "x", "e")};
    rows[1].v[ROW_DUE] = "f"; /* A/x's second event waits */
    rows[0].v[ROW_DUE] = rows[2].v[ROW_DUE] = rows[3].v[ROW_DUE] = "t";
    batch b;
    batch_init(&b, 6);
    batch_take(&b, claim_result(rows, 6));
    assert_int_equal(b.count, 3);
    assert_int_equal(b.rows[0].id, 1);
    assert_int_equal(b.rows[1].id, 2);
    assert_int_equal(b.rows[2].id, 5); /* due by NULL, as an unordered claim says */
    assert_string_equal(b.rows[2].event_id, "5");
    batch_free(&b);
}

/* Runs rounded up past the batch size are cut from their ends: every head
 * first, then second events, lowest ids first. */
static void test_runs_cut_to_the_batch_size(void **state)
{
    (void)state;
    claim_row rows[] = {claim_row_of("1", "A", "x", "e"), claim_row_of("4", "B", "y", "e"),
                        claim_row_of("6", "C", "z", "e"), claim_row_of("2", "A", "x", "e"),
                        claim_row_of("3", "A", "x", "e"), claim_row_of("5", "B", "y", "e")};
    batch b;
    batch_init(&b, 4);
    batch_take(&b, claim_result(rows, 6));
    static const long long want[] = {1, 2, 4, 6};
    assert_int_equal(b.count, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(b.rows[i].id, want[i]);
    assert_string_equal(b.rows[1].aggregate_type, "A");
    batch_free(&b);
}

static void test_empty_claim(void **state)
{
    (void)state;
    batch b;
    batch_init(&b, 4);
    batch_take(&b, claim_result(NULL, 0));
    assert_int_equal(b.count, 0);
    assert_false(batch_has(&b, 1));
    batch_after_failure(&b, NULL, NULL);
    batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_sorted_by_id_and_parsed),
        cmocka_unit_test(test_after_failure_per_aggregate),
        cmocka_unit_test(test_after_failure_holds_the_rest),
        cmocka_unit_test(test_run_cut_at_an_event_not_due),
        cmocka_unit_test(test_runs_cut_to_the_batch_size),
        cmocka_unit_test(test_aggregate_is_type_and_id),
        cmocka_unit_test(test_empty_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
