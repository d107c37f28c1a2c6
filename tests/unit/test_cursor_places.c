/*
 * The cursor's places: the window confirms a prefix of its transactions by
 * the last row's id of the last one; the place saved must be that
 * transaction's, never a later one, whatever the ring's wrap and growth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cursor/cursor_places.h"

static void push(cursor_places *q, uint64_t xid, long long id)
{
    cursor_place at = {xid, id};
    cursor_places_push(q, &at);
}

static void test_confirm_takes_that_place(void **state)
{
    (void)state;
    cursor_places q = {0};
    push(&q, 10, 5);
    push(&q, 10, 9); /* ids, not places, name the transactions */
    push(&q, 12, 7);
    cursor_place done = {0, 0};
    cursor_places_confirm(&q, 9, &done);
    assert_int_equal(done.xid, 10);
    assert_int_equal(done.id, 9);
    assert_int_equal(q.len, 1);
    cursor_places_confirm(&q, 7, &done);
    assert_int_equal(done.xid, 12);
    assert_int_equal(done.id, 7);
    assert_int_equal(q.len, 0);
    cursor_places_free(&q);
}

/* Confirmed and pushed in turns past the first capacity: the ring wraps,
 * then grows while wrapped, and keeps the order. */
static void test_wrap_and_grow(void **state)
{
    (void)state;
    cursor_places q = {0};
    long long next = 1, confirmed = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 300 + round * 10; i++, next++)
            push(&q, (uint64_t)next * 2, next);
        long long upto = confirmed + 250;
        cursor_place done = {0, 0};
        cursor_places_confirm(&q, (uint64_t)upto, &done);
        assert_int_equal(done.id, upto);
        assert_int_equal(done.xid, (uint64_t)upto * 2);
        confirmed = upto;
        assert_int_equal(q.len, (size_t)(next - 1 - confirmed));
    }
    cursor_places_clear(&q);
    assert_int_equal(q.len, 0);
    cursor_places_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confirm_takes_that_place),
        cmocka_unit_test(test_wrap_and_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
