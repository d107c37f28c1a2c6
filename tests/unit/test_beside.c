/*
 * Scheduling a second batch beside a busy one: only beside a full batch
 * whose broker is answering and which still has answers due, and never
 * while stopping, before a reload or after a claim beside found nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "poll/beside.h"

/* A full batch with its first answer in and more due. */
static beside_view worth_it(void)
{
    return (beside_view){.busy_count = 500, .batch_size = 500, .busy_answered = 1, .busy_left = 7};
}

static void test_worth_it_beside_a_full_answering_batch(void **state)
{
    (void)state;
    beside_view v = worth_it();
    assert_true(beside_worth(&v));
    v.busy_answered = 0;
    v.answering = 1; /* an earlier batch got all its answers: the broker answers */
    assert_true(beside_worth(&v));
    v.busy_count = 600; /* a run cut to the size counts as full too */
    assert_true(beside_worth(&v));
}

static void test_not_worth_it(void **state)
{
    (void)state;
    beside_view v;
    v = worth_it(), v.stopping = 1;
    assert_false(beside_worth(&v));
    v = worth_it(), v.generation_pending = 1; /* the reload waits for no lane in flight */
    assert_false(beside_worth(&v));
    v = worth_it(), v.found_empty = 1; /* not again before a record */
    assert_false(beside_worth(&v));
    v = worth_it(), v.busy_count = 499; /* a small batch: nothing more pending */
    assert_false(beside_worth(&v));
    v = worth_it(), v.busy_answered = 0; /* no sign the broker is answering */
    assert_false(beside_worth(&v));
    v = worth_it(), v.busy_left = 0; /* every answer in: record it first */
    assert_false(beside_worth(&v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worth_it_beside_a_full_answering_batch),
        cmocka_unit_test(test_not_worth_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
