/*
 * WAL mode's settle on the real memory driver: a window of committed
 * events, sent by the publisher, completed through the driver's host table.
 * A completion of a send that is no longer the event's is ignored; OK
 * finishes the event and moves the confirmable commit; RETRIABLE re-queues
 * it after the policy's backoff (its aggregate waiting behind it);
 * UNAVAILABLE defers it without counting an attempt. Dead letters are left
 * to the WAL tests: writing one needs the database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "relay_fixture.h"
#include "window/window_publish.h"

typedef struct fixture {
    relay_fixture *rf;
    window w;
    window_publisher p;
    long long now;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->rf = relay_fixture_open();
    window_init(&f->w, 1);
    assert_int_equal(window_publisher_init(&f->p, &f->rf->st, &f->w, NULL, NULL), 0);
    f->now = now_ms();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    window_publisher_free(&f->p);
    window_free(&f->w);
    relay_fixture_close(f->rf);
    free(f);
    return 0;
}

/* An event as the decoder hands it over: one allocation. */
static event_row *row_of(const char *event_id, const char *aggregate_id, const char *event_type)
{
    const char *v[WF_COUNT] = {[WF_EVENT_ID] = event_id,
                               [WF_AGGREGATE_TYPE] = "Order",
                               [WF_AGGREGATE_ID] = aggregate_id,
                               [WF_EVENT_TYPE] = event_type,
                               [WF_PAYLOAD] = "{}"};
    size_t size = sizeof(event_row);
    for (int i = 0; i < WF_COUNT; i++)
        size += v[i] ? strlen(v[i]) + 1 : 0;
    event_row *row = calloc(1, size);
    char *at = (char *)(row + 1);
    for (int i = 0; i < WF_COUNT; i++) {
        if (!v[i])
            continue;
        row->len[i] = strlen(v[i]);
        row->v[i] = memcpy(at, v[i], row->len[i] + 1);
        at += row->len[i] + 1;
    }
    return row;
}

/* A committed transaction of one event; returns the event. */
static window_event *commit_one(fixture *f, const char *aggregate_id, const char *event_type,
                             uint64_t lsn)
{
    static unsigned n;
    char id[40];
    snprintf(id, sizeof id, "00000000-0000-4000-8000-%012u", ++n);
    window_begin(&f->w, 0);
    window_add(&f->w, row_of(id, aggregate_id, event_type));
    window_commit(&f->w, lsn);
    return window_find(&f->w, f->w.next_seq - 1);
}

/* What output out's driver would call for send `check` of ev. */
static void complete(fixture *f, size_t out, const window_event *ev, uint32_t check, obx_status status)
{
    const obx_host *host = &f->p.dl.outs.out[out].host->host;
    host->complete(host->host_ctx, delivery_token(ev->seq, check), status, 0, "broker said so");
}

static long long count_of(atomic_llong *counter)
{
    return atomic_load(counter);
}

static void test_ok_finishes_and_moves_the_commit(void **state)
{
    fixture *f = *state;
    relay_stats *stats = &f->rf->st.stats;
    window_event *a = commit_one(f, "A", "late.x", 100), *b = commit_one(f, "B", "late.x", 200);
    assert_int_equal(window_publisher_send(&f->p, f->now), 2);
    assert_int_equal(a->state, EV_IN_FLIGHT);
    assert_int_equal(a->attempt, 1);
    assert_int_equal(f->p.in_flight, 2);

    complete(f, OUT_LATE, b, b->sends, OBX_OK);
    assert_int_equal(window_publisher_settle(&f->p, f->now), 1);
    assert_int_equal(b->state, EV_DONE);
    assert_int_equal(f->p.in_flight, 1);
    assert_int_equal(window_confirm(&f->w), 0); /* the first commit still holds an event */

    complete(f, OUT_LATE, a, a->sends, OBX_OK);
    window_publisher_settle(&f->p, f->now);
    assert_int_equal(f->p.in_flight, 0);
    assert_int_equal(count_of(&stats->published), 2);
    assert_int_equal(window_confirm(&f->w), 200);
    assert_true(window_empty(&f->w));
}

static void test_stale_send_is_ignored(void **state)
{
    fixture *f = *state;
    relay_stats *stats = &f->rf->st.stats;
    window_event *ev = commit_one(f, "A", "late.x", 100);
    window_publisher_send(&f->p, f->now);
    complete(f, OUT_LATE, ev, 1, OBX_RETRIABLE);
    window_publisher_settle(&f->p, f->now);
    assert_int_equal(ev->state, EV_WAITING);
    assert_int_equal(window_publisher_send(&f->p, f->now + 1000), 1); /* its second send */
    assert_int_equal(ev->sends, 2);

    complete(f, OUT_LATE, ev, 1, OBX_RETRIABLE); /* the first send's, late */
    complete(f, OUT_LATE, ev, 3, OBX_RETRIABLE); /* a send not made */
    assert_int_equal(window_publisher_settle(&f->p, f->now + 1000), 2);
    assert_int_equal(ev->state, EV_IN_FLIGHT);
    assert_int_equal(f->p.in_flight, 1);
    assert_int_equal(count_of(&stats->retried), 1);

    complete(f, OUT_LATE, ev, 2, OBX_OK);        /* the current one, then */
    complete(f, OUT_LATE, ev, 2, OBX_RETRIABLE); /* a duplicate of it */
    assert_int_equal(window_publisher_settle(&f->p, f->now + 1000), 2);
    assert_int_equal(ev->state, EV_DONE);
    assert_int_equal(f->p.in_flight, 0);
    assert_int_equal(count_of(&stats->published), 1);
    assert_int_equal(count_of(&stats->retried), 1);
    assert_int_equal(window_confirm(&f->w), 100);

    /* one for an event already confirmed and gone */
    complete(f, OUT_LATE, ev, 2, OBX_RETRIABLE);
    window_publisher_settle(&f->p, f->now + 1000);
    assert_int_equal(count_of(&stats->retried), 1);
    assert_int_equal(f->p.in_flight, 0);
}

static void test_retriable_requeues_after_backoff(void **state)
{
    fixture *f = *state;
    relay_stats *stats = &f->rf->st.stats;
    window_event *ev = commit_one(f, "A", "flaky.always", 100);
    window_event *next = commit_one(f, "A", "plain.x", 200); /* same aggregate, behind it */
    assert_int_equal(window_publisher_send(&f->p, f->now), 1);
    window_publisher_settle(&f->p, f->now); /* completed inside publish_batch */
    assert_int_equal(ev->state, EV_WAITING);
    assert_int_equal(ev->attempt, 1);
    assert_int_equal(ev->due_ms, f->now + 1000); /* backoff 1000 ms, no jitter */
    assert_int_equal(next->state, EV_BLOCKED);
    assert_int_equal(count_of(&stats->retried), 1);
    assert_int_equal(window_wait_ms(&f->w, f->now), 1000);

    assert_int_equal(window_publisher_send(&f->p, f->now + 999), 0);
    assert_int_equal(window_publisher_send(&f->p, f->now + 1000), 1);
    assert_int_equal(ev->attempt, 2);
    window_publisher_settle(&f->p, f->now + 1000);
    assert_int_equal(ev->due_ms, f->now + 1000 + 2000); /* doubled */
    assert_int_equal(next->state, EV_BLOCKED);
    assert_int_equal(window_confirm(&f->w), 0);
}

static void test_unavailable_defers_without_an_attempt(void **state)
{
    fixture *f = *state;
    relay_stats *stats = &f->rf->st.stats;
    /* refused at publish (the memory driver's down file exists) */
    window_event *refused = commit_one(f, "A", "down.x", 100);
    assert_int_equal(window_publisher_send(&f->p, f->now), 1);
    assert_int_equal(refused->state, EV_WAITING);
    assert_int_equal(refused->attempt, 0);
    assert_true(refused->due_ms >= f->now + 100);
    assert_int_equal(count_of(&stats->deferred), 1);
    assert_int_equal(count_of(&stats->retried), 0);
    assert_int_equal(f->p.in_flight, 0);
    assert_true(health_is_down(outputs_health(&f->p.dl.outs, OUT_DOWN)));

    /* while it is paused the event is held back, still unattempted */
    assert_int_equal(window_publisher_send(&f->p, f->now + 60000), 0);
    assert_int_equal(refused->attempt, 0);
    assert_int_equal(refused->state, EV_READY);

    /* completed as unavailable */
    window_event *late = commit_one(f, "B", "late.x", 200);
    assert_int_equal(window_publisher_send(&f->p, f->now), 1);
    assert_int_equal(late->attempt, 1);
    complete(f, OUT_LATE, late, late->sends, OBX_UNAVAILABLE);
    window_publisher_settle(&f->p, f->now);
    assert_int_equal(late->state, EV_WAITING);
    assert_int_equal(late->attempt, 0);
    assert_int_equal(count_of(&stats->deferred), 2);
    assert_int_equal(count_of(&stats->retried), 0);
    assert_true(health_is_down(outputs_health(&f->p.dl.outs, OUT_LATE)));
}

int main(int argc, char **argv)
{
    relay_fixture_driver(argc > 1 ? argv[1] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ok_finishes_and_moves_the_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_send_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retriable_requeues_after_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unavailable_defers_without_an_attempt, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
