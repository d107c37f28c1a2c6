/*
 * Completion routing through a worker's flights, on the real memory driver:
 * each completion comes through the driver's host table (as a driver calls
 * it), the delivery core decodes its token and the flights route it to its
 * lane and slot. A completion of the current batch fills its slot; a stale,
 * duplicate, out-of-range, other-lane or late one changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deliver/flight.h"
#include "relay_fixture.h"

#define CAPACITY 8

typedef struct fixture {
    relay_fixture *rf;
    delivery d;
    flights fs;
    obx_message msgs[CAPACITY];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->rf = relay_fixture_open();
    delivery_init(&f->d, &f->rf->st, 0, flight_on_complete, &f->fs);
    flights_init(&f->fs, CAPACITY, &f->d, "worker 0");
    assert_int_equal(outputs_ensure(&f->d.outs, 1), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    delivery_free(&f->d); /* closing completes what the drivers hold, before the flights go */
    flights_free(&f->fs);
    relay_fixture_close(f->rf);
    free(f);
    return 0;
}

/* Begins a batch of count messages of event type `type` on lane k, all for
 * output out, and offers them. */
static flight *start(fixture *f, unsigned k, int count, size_t out, const char *type)
{
    flight *fl = &f->fs.lane[k];
    flight_begin(fl, count);
    for (int i = 0; i < count; i++) {
        fl->slots[i].state = SLOT_AWAITING;
        fl->slots[i].output = out;
        f->msgs[i] = fixture_message(type, i % 2 ? "odd" : "even", flight_token(fl, i));
    }
    flight_publish(fl, out, f->msgs, NULL, 1);
    return fl;
}

/* What the late output's driver would call. */
static void complete(fixture *f, uint64_t token, obx_status status)
{
    const obx_host *host = &f->d.outs.out[OUT_LATE].host->host;
    host->complete(host->host_ctx, token, status, 0, status == OBX_OK ? NULL : "broker said no");
}

static void assert_states(const flight *fl, const char *want)
{
    static const char letter[] = {[SLOT_AWAITING] = 'a', [SLOT_DONE] = 'd', [SLOT_REFUSED] = 'r',
                                  [SLOT_ABORTED] = 'x',  [SLOT_BAD] = 'b',  [SLOT_NOT_SENT] = 'n'};
    char got[CAPACITY + 1] = "";
    for (int i = 0; i < fl->count; i++)
        got[i] = letter[fl->slots[i].state];
    assert_string_equal(got, want);
}

static void test_current_batch_fills_its_slot(void **state)
{
    fixture *f = *state;
    flight *fl = start(f, 0, 3, OUT_LATE, "late.a");
    uint64_t t = flight_token(fl, 1);
    assert_int_equal(delivery_token_check(t), fl->seq);
    assert_int_not_equal(delivery_token_key(t),
                         delivery_token_key(flight_token(&f->fs.lane[1], 1)));
    assert_int_equal(flight_left(fl), 3);
    assert_false(flight_answered(fl));

    complete(f, t, OBX_OK);
    assert_states(fl, "ada");
    assert_int_equal(fl->slots[1].status, OBX_OK);
    assert_int_equal(flight_left(fl), 2);
    assert_true(flight_answered(fl));

    complete(f, flight_token(fl, 0), OBX_RETRIABLE);
    assert_states(fl, "dda");
    assert_int_equal(fl->slots[0].status, OBX_RETRIABLE);
    assert_string_equal(fl->slots[0].detail, "broker said no");
    assert_int_equal(flight_verdict(&fl->slots[0]).kind, VERDICT_COMPLETED);
    assert_int_equal(flight_left(fl), 1);
}

static void test_ignored_completions(void **state)
{
    fixture *f = *state;
    flight *fl = start(f, 0, 3, OUT_LATE, "late.a");
    uint64_t old = flight_token(fl, 1);
    flight_end(fl);
    fl = start(f, 0, 3, OUT_LATE, "late.a"); /* the next batch on lane 0 */
    flight *other = start(f, 1, 2, OUT_LATE, "late.b");
    flight_end(other);
    other = start(f, 1, 2, OUT_LATE, "late.b");
    flight_end(other); /* lane 1 recorded its batch, numbered as lane 0's */
    assert_int_equal(fl->seq, 2);
    assert_int_equal(other->seq, fl->seq);
    complete(f, flight_token(fl, 0), OBX_OK);
    assert_int_equal(flight_left(fl), 2);

    complete(f, old, OBX_OK);                            /* stale: an old batch */
    complete(f, flight_token(fl, 0), OBX_PERMANENT);     /* duplicate */
    complete(f, flight_token(fl, 3), OBX_OK);            /* past the count */
    complete(f, flight_token(fl, 100000), OBX_OK);       /* past the capacity */
    complete(f, flight_token(other, 1), OBX_OK);         /* lane 1's, not active */
    complete(f, delivery_token(1, fl->seq + 1), OBX_OK); /* a batch not begun */
    assert_states(fl, "daa");
    assert_int_equal(fl->slots[0].status, OBX_OK);
    assert_int_equal(flight_left(fl), 2);
    assert_states(other, "aa");
    assert_int_equal(flight_left(other), 2);

    uint64_t late = flight_token(fl, 2);
    flight_end(fl);
    complete(f, late, OBX_OK); /* after the batch was recorded */
    assert_states(fl, "daa");
    assert_int_equal(flight_left(fl), 2);
}

static void test_lanes_route_apart(void **state)
{
    fixture *f = *state;
    flight *a = start(f, 0, 3, OUT_LATE, "late.a"), *b = start(f, 1, 2, OUT_LATE, "late.b");
    assert_int_equal(a->seq, b->seq); /* only the lane tells their tokens apart */
    complete(f, flight_token(b, 1), OBX_OK);
    assert_states(a, "aaa");
    assert_states(b, "ad");
    assert_int_equal(flight_left(a), 3);
    assert_int_equal(flight_left(b), 1);
    assert_false(flight_answered(a));
    assert_true(flight_answered(b));
}

static void test_fatal_marks_broken(void **state)
{
    fixture *f = *state;
    flight *fl = start(f, 0, 2, OUT_LATE, "late.a");
    complete(f, flight_token(fl, 1), OBX_FATAL);
    assert_states(fl, "ad");
    assert_int_equal(fl->slots[1].status, OBX_FATAL);
    assert_true(atomic_load(&f->d.outs.out[OUT_LATE].broken));
    assert_false(atomic_load(&f->d.outs.out[OUT_PLAIN].broken));
    assert_int_equal(flight_left(fl), 1);
}

/* Completions inside publish_batch, refusals and a paused output. */
static void test_publish_settles_slots(void **state)
{
    fixture *f = *state;
    flight *fl = start(f, 0, 3, OUT_PLAIN, "plain.a");
    assert_states(fl, "ddd");
    assert_int_equal(flight_left(fl), 0);
    assert_true(flight_answered(fl));
    flight_end(fl);

    flight_begin(fl, 3);
    const char *types[] = {"refusing.ok", "refusing.no", "refusing.ok"};
    for (int i = 0; i < 3; i++) {
        fl->slots[i].state = SLOT_AWAITING;
        fl->slots[i].output = i < 2 ? OUT_REFUSING : OUT_PLAIN;
        f->msgs[i] = fixture_message(types[i], "agg", flight_token(fl, i));
    }
    flight_publish(fl, OUT_REFUSING, f->msgs, NULL, 1);
    flight_publish(fl, OUT_PLAIN, f->msgs, NULL, 0); /* its output is paused */
    assert_states(fl, "drn");
    assert_string_equal(fl->slots[1].detail, "refuse_event_type: this event type is refused");
    assert_int_equal(flight_verdict(&fl->slots[1]).kind, VERDICT_REFUSED);
    assert_int_equal(flight_verdict(&fl->slots[2]).kind, VERDICT_NOT_SENT);
    assert_true(fl->slots[1].offered);
    assert_false(fl->slots[2].offered);
    assert_int_equal(flight_left(fl), 0);
}

/* A batch given back at relay.max_transaction_ms: what is still awaited
 * settles as the output's outage, the instance gets no more messages until
 * it has completed what it holds, and those late completions change nothing. */
static void test_give_back(void **state)
{
    fixture *f = *state;
    flight *fl = start(f, 0, 3, OUT_LATE, "late.a");
    atomic_long *owed = &f->d.outs.out[OUT_LATE].host->owed;
    complete(f, flight_token(fl, 0), OBX_OK);
    assert_int_equal(atomic_load(owed), 2);

    assert_int_equal(flight_give_back(fl, "no acknowledgement"), 2);
    assert_states(fl, "ddd");
    assert_int_equal(fl->slots[0].status, OBX_OK);
    assert_int_equal(fl->slots[2].status, OBX_UNAVAILABLE);
    assert_string_equal(fl->slots[2].detail, "no acknowledgement");
    assert_int_equal(flight_verdict(&fl->slots[2]).kind, VERDICT_COMPLETED);
    assert_int_equal(flight_left(fl), 0);
    assert_false(outputs_may_send(&f->d.outs, OUT_LATE)); /* it still holds two */
    assert_true(outputs_may_send(&f->d.outs, OUT_PLAIN));

    complete(f, flight_token(fl, 1), OBX_OK); /* late */
    assert_int_equal(fl->slots[1].status, OBX_UNAVAILABLE);
    assert_false(outputs_may_send(&f->d.outs, OUT_LATE));
    complete(f, flight_token(fl, 2), OBX_RETRIABLE);
    assert_int_equal(atomic_load(&f->fs.late), 0);
    assert_true(outputs_may_send(&f->d.outs, OUT_LATE)); /* it answered all it held */
}

int main(int argc, char **argv)
{
    relay_fixture_driver(argc > 1 ? argv[1] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_current_batch_fills_its_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignored_completions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lanes_route_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fatal_marks_broken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_settles_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_give_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
