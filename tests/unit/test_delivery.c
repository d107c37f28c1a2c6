/*
 * The delivery core on the real memory driver, loaded as the relay loads
 * it: publish (refusals keep the driver's reason, a FATAL publish marks the
 * instance broken, completions reach the intake with the token decoded) and
 * settle (health learned from every message first, the retry policy of the
 * generation, in-flight counters).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "deliver/delivery.h"
#include "relay_fixture.h"
#include "telemetry/counters.h"

/* What reached the intake. */
typedef struct intake_log {
    size_t n;
    uint64_t key[8];
    uint32_t check[8];
    obx_status status[8];
} intake_log;

static void record_intake(void *arg, uint64_t key, uint32_t check, obx_status status,
                          int native_code, const char *detail)
{
    intake_log *log = arg;
    (void)native_code;
    (void)detail;
    if (log->n < 8) {
        log->key[log->n] = key;
        log->check[log->n] = check;
        log->status[log->n] = status;
    }
    log->n++;
}

typedef struct fixture {
    relay_fixture *rf;
    delivery d;
    intake_log log;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->rf = relay_fixture_open();
    delivery_init(&f->d, &f->rf->st, 0, record_intake, &f->log);
    assert_int_equal(outputs_ensure(&f->d.outs, 1), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    delivery_free(&f->d);
    relay_fixture_close(f->rf);
    free(f);
    return 0;
}

static long long in_flight(fixture *f, size_t out)
{
    const char *name = f->rf->st.cfg->outputs[out].name;
    return atomic_load(&counters_output(f->rf->st.metrics, name)->in_flight);
}

/* ---- publish ---- */

static void test_token_round_trip(void **state)
{
    (void)state;
    uint64_t t = delivery_token(UINT64_C(0xabcdef1234), 0x123456);
    assert_int_equal(delivery_token_key(t), UINT64_C(0xabcdef1234));
    assert_int_equal(delivery_token_check(t), 0x123456);
    /* a key or check too wide for its bits is cut, never bleeds into the other */
    t = delivery_token(UINT64_C(0x1ffffffffff), 0x1abcdef);
    assert_int_equal(delivery_token_key(t), UINT64_C(0xffffffffff));
    assert_int_equal(delivery_token_check(t), 0xabcdef);
    assert_int_equal(delivery_token_check(delivery_token(5, 0)), 0);
}

static void test_publish_refusal_keeps_the_reason(void **state)
{
    fixture *f = *state;
    obx_message msgs[2] = {fixture_message("refusing.yes", "1", delivery_token(7, 3)),
                           fixture_message("refusing.no", "2", delivery_token(8, 3))};
    obx_status accept[2];
    char refusal[2][DELIVERY_DETAIL_MAX];
    assert_int_equal(delivery_publish(&f->d, OUT_REFUSING, msgs, NULL, 2, accept, refusal), 1);
    assert_int_equal(accept[0], OBX_OK);
    assert_int_equal(accept[1], OBX_RETRIABLE);
    assert_string_equal(refusal[0], "");
    assert_string_equal(refusal[1], "refuse_event_type: this event type is refused");
    assert_false(atomic_load(&f->d.outs.out[OUT_REFUSING].broken));
    /* the accepted one completed inside publish_batch, its token decoded */
    assert_int_equal(f->log.n, 1);
    assert_int_equal(f->log.key[0], 7);
    assert_int_equal(f->log.check[0], 3);
    assert_int_equal(f->log.status[0], OBX_OK);
    assert_int_equal(in_flight(f, OUT_REFUSING), 2); /* both, until settled */
}

static void test_publish_fatal_marks_broken(void **state)
{
    fixture *f = *state;
    obx_message msgs[2] = {fixture_message("fatal.a", "1", delivery_token(1, 1)),
                           fixture_message("fatal.b", "2", delivery_token(2, 1))};
    obx_status accept[2];
    char refusal[2][DELIVERY_DETAIL_MAX];
    assert_int_equal(delivery_publish(&f->d, OUT_FATAL, msgs, NULL, 2, accept, refusal), 1);
    assert_int_equal(accept[0], OBX_OK);
    assert_int_equal(accept[1], OBX_FATAL);
    assert_string_equal(refusal[1], "driver instance failed"); /* the driver gave none */
    assert_true(atomic_load(&f->d.outs.out[OUT_FATAL].broken));
    assert_false(atomic_load(&f->d.outs.out[OUT_PLAIN].broken));
}

static void test_publish_unavailable(void **state)
{
    fixture *f = *state;
    obx_message msgs[2] = {fixture_message("down.a", "1", delivery_token(1, 1)),
                           fixture_message("down.b", "1", delivery_token(2, 1))};
    obx_status accept[2];
    char refusal[2][DELIVERY_DETAIL_MAX];
    assert_int_equal(delivery_publish(&f->d, OUT_DOWN, msgs, NULL, 2, accept, refusal), 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(accept[k], OBX_UNAVAILABLE);
        assert_string_equal(refusal[k], "unavailable_file exists");
    }
    assert_false(atomic_load(&f->d.outs.out[OUT_DOWN].broken));
    assert_int_equal(f->log.n, 0);
}

/* ---- settle ---- */

static settle_item completed(size_t out, obx_status status, unsigned attempt)
{
    return (settle_item){.output = out,
                         .v = {VERDICT_COMPLETED, status, 0, "broker said so"},
                         .attempt = attempt,
                         .offered = 1,
                         .since_ms = now_ms()};
}

static void test_settle_ok_resumes_health(void **state)
{
    fixture *f = *state;
    output_health *h = outputs_health(&f->d.outs, OUT_PLAIN);
    health_down(h, "earlier outage");
    settle_item it = completed(OUT_PLAIN, OBX_OK, 1);
    decision d;
    delivery_settle(&f->d, &it, 1, &d);
    assert_int_equal(d.outcome, OUTCOME_PUBLISHED);
    assert_false(health_is_down(h));
}

static void test_settle_unavailable_pauses(void **state)
{
    fixture *f = *state;
    settle_item it = completed(OUT_PLAIN, OBX_UNAVAILABLE, 2);
    decision d;
    delivery_settle(&f->d, &it, 1, &d);
    assert_int_equal(d.outcome, OUTCOME_DEFER); /* no attempt counted */
    assert_true(d.delay_ms >= 100);
    assert_string_equal(d.error, "unavailable: broker said so");
    assert_true(health_is_down(outputs_health(&f->d.outs, OUT_PLAIN)));
    assert_false(health_is_down(outputs_health(&f->d.outs, OUT_FLAKY)));
}

static void test_settle_retriable_backs_off_then_dead(void **state)
{
    fixture *f = *state;
    settle_item it[3] = {completed(OUT_PLAIN, OBX_RETRIABLE, 1),
                         completed(OUT_PLAIN, OBX_RETRIABLE, 2),
                         completed(OUT_PLAIN, OBX_RETRIABLE, 3)};
    decision d[3];
    delivery_settle(&f->d, it, 3, d);
    assert_int_equal(d[0].outcome, OUTCOME_RETRY);
    assert_int_equal(d[0].delay_ms, 1000); /* the generation's policy, no jitter */
    assert_int_equal(d[1].outcome, OUTCOME_RETRY);
    assert_int_equal(d[1].delay_ms, 2000);
    assert_int_equal(d[2].outcome, OUTCOME_DEAD); /* max_attempts 3 */
    assert_string_equal(d[2].error, "gave up after 3 attempts: broker said so");
    assert_false(health_is_down(outputs_health(&f->d.outs, OUT_PLAIN)));
}

static void test_settle_permanent_and_after_failure(void **state)
{
    fixture *f = *state;
    settle_item it[3] = {completed(OUT_PLAIN, OBX_PERMANENT, 1), completed(OUT_PLAIN, OBX_OK, 1),
                         completed(OUT_PLAIN, OBX_RETRIABLE, 1)};
    it[1].after_failure = it[2].after_failure = 1;
    decision d[3];
    delivery_settle(&f->d, it, 3, d);
    assert_int_equal(d[0].outcome, OUTCOME_DEAD);
    assert_string_equal(d[0].error, "broker said so");
    assert_int_equal(d[1].outcome, OUTCOME_RELEASE);
    assert_int_equal(d[2].outcome, OUTCOME_RELEASE);
}

/* Message 1 was not sent (its output was being probed by this batch), message
 * 2 found the output still unavailable: message 1 waits for the pause message
 * 2 caused, not for the 100 ms floor of an output that seemed up. */
static void test_settle_learns_health_first(void **state)
{
    fixture *f = *state;
    output_health *h = outputs_health(&f->d.outs, OUT_PLAIN);
    health_down(h, "earlier outage");
    pthread_mutex_lock(&h->lock);
    h->backoff_ms = 1000;          /* doubled by message 2 (to the 2 s cap) */
    h->probe_at_ms = now_ms() - 1; /* its probe is due: this batch */
    pthread_mutex_unlock(&h->lock);
    settle_item it[2] = {
        {.output = OUT_PLAIN, .v = {VERDICT_NOT_SENT, OBX_UNAVAILABLE, 0, "paused"}, .attempt = 1},
        completed(OUT_PLAIN, OBX_UNAVAILABLE, 1)};
    decision d[2];
    delivery_settle(&f->d, it, 2, d);
    assert_int_equal(d[0].outcome, OUTCOME_DEFER);
    assert_int_equal(d[1].outcome, OUTCOME_DEFER);
    /* message 2's pause (about 2 s; only a stall of 1.9 s between two
     * lines would bring it to the floor), and message 1 the same one, read a
     * moment earlier: not the 100 ms floor of an output that seemed up */
    assert_true(d[1].delay_ms > 100);
    assert_true(d[0].delay_ms >= d[1].delay_ms);
}

static void test_settle_counts_in_flight_only_when_offered(void **state)
{
    fixture *f = *state;
    counters_sent(f->rf->st.metrics, f->rf->st.cfg, OUT_PLAIN);
    counters_sent(f->rf->st.metrics, f->rf->st.cfg, OUT_PLAIN);
    assert_int_equal(in_flight(f, OUT_PLAIN), 2);
    settle_item it[2] = {
        completed(OUT_PLAIN, OBX_OK, 1),
        {.output = OUT_PLAIN, .v = {VERDICT_BAD_ROW, OBX_PERMANENT, 0, "bad headers"}},
    };
    it[0].route = &f->rf->st.cfg->routes[OUT_PLAIN];
    decision d[2];
    delivery_settle(&f->d, it, 2, d);
    assert_int_equal(d[1].outcome, OUTCOME_DEAD);
    assert_int_equal(in_flight(f, OUT_PLAIN), 1); /* the bad row was never offered */
    output_stats *o = counters_output(f->rf->st.metrics, "plain");
    assert_int_equal(atomic_load(&o->n.published), 1);
    assert_int_equal(atomic_load(&o->n.dead), 1);
}

int main(int argc, char **argv)
{
    relay_fixture_driver(argc > 1 ? argv[1] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_round_trip),
        cmocka_unit_test_setup_teardown(test_publish_refusal_keeps_the_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_fatal_marks_broken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_ok_resumes_health, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_unavailable_pauses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_retriable_backs_off_then_dead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_permanent_and_after_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_learns_health_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_counts_in_flight_only_when_offered, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
