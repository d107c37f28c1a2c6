/*
 * A replay's window: events leave it only in id order once done, and in a
 * round an aggregate is held behind its first event not done, so its
 * events go one at a time, in order; other aggregates are not held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replay/replay_window.h"

static replay_window *window_of(const char *const *aggregates, size_t n)
{
    replay_window *w = calloc(1, sizeof *w);
    for (size_t i = 0; i < n; i++) {
        replay_row row = {.id = (long long)i + 1};
        row.v[RF_AGGREGATE_TYPE] = strdup("Order");
        row.v[RF_AGGREGATE_ID] = strdup(aggregates[i]);
        replay_window_push(w, &row);
    }
    return w;
}

static void window_free(replay_window *w)
{
    for (size_t i = 0; i < w->count; i++)
        replay_row_free(&replay_window_find(w, w->head + i)->row);
    free(w);
}

/* The round's walk: which events may be sent (1) in window order. */
static void walk(replay_window *w, int *may)
{
    replay_window_round(w);
    for (size_t i = 0; i < w->count; i++) {
        replay_event *ev = replay_window_find(w, w->head + i);
        may[i] = ev->state != REV_DONE && !replay_window_held(w, ev) && ev->state == REV_QUEUED;
    }
}

static void test_one_per_aggregate_in_order(void **state)
{
    (void)state;
    const char *aggs[] = {"a", "b", "a", "c", "b", "a"};
    replay_window *w = window_of(aggs, 6);
    int may[6];
    walk(w, may);
    int want1[] = {1, 1, 0, 1, 0, 0};
    assert_memory_equal(may, want1, sizeof want1);
    /* a's first in flight: a's second still waits; b's first done: b's second goes */
    replay_window_find(w, 0)->state = REV_FLIGHT;
    replay_window_find(w, 1)->state = REV_DONE;
    walk(w, may);
    int want2[] = {0, 0, 0, 1, 1, 0};
    assert_memory_equal(may, want2, sizeof want2);
    window_free(w);
}

static void test_leaves_in_id_order(void **state)
{
    (void)state;
    const char *aggs[] = {"a", "b", "c"};
    replay_window *w = window_of(aggs, 3);
    replay_window_find(w, 1)->state = REV_DONE;
    assert_null(replay_window_pop_done(w)); /* the first is not done: nothing leaves */
    replay_window_find(w, 0)->state = REV_DONE;
    replay_event *ev = replay_window_pop_done(w);
    assert_non_null(ev);
    assert_int_equal(ev->row.id, 1);
    replay_row_free(&ev->row);
    ev = replay_window_pop_done(w);
    assert_int_equal(ev->row.id, 2);
    replay_row_free(&ev->row);
    assert_null(replay_window_pop_done(w));
    assert_int_equal(w->count, 1);
    assert_null(replay_window_find(w, 0)); /* gone: a late completion finds nothing */
    assert_int_equal(replay_window_find(w, 2)->row.id, 3);
    window_free(w);
}

static void test_ring_wraps(void **state)
{
    (void)state;
    replay_window *w = calloc(1, sizeof *w);
    for (long long id = 1; id <= 3 * REPLAY_WINDOW; id++) {
        replay_row row = {.id = id};
        row.v[RF_AGGREGATE_ID] = strdup("a");
        replay_window_push(w, &row);
        replay_event *ev = replay_window_find(w, w->head);
        ev->state = REV_DONE;
        ev = replay_window_pop_done(w);
        assert_int_equal(ev->row.id, id);
        assert_int_equal(ev->seq, (uint64_t)(id - 1));
        replay_row_free(&ev->row);
    }
    assert_int_equal(w->count, 0);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_per_aggregate_in_order),
        cmocka_unit_test(test_leaves_in_id_order),
        cmocka_unit_test(test_ring_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
