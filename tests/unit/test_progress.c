/*
 * The progress lines of a backlog's drain (core/ops/progress.c): nothing
 * when idle or with a small steady flow; left, rate and an ETA every
 * interval while a backlog drains; "not shrinking" when it is stuck or
 * grows; the drained line once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ops/progress.h"

#define NAME "public.outbox"

static char line[512];

/* One sample as the poller takes it; the line's text, or NULL for none. */
static const char *sample(progress *p, long long now, long long pending, long long done)
{
    line[0] = '\0';
    return progress_sample(p, NAME, now, pending, done, line, sizeof line) ? line : NULL;
}

static void test_formats(void **state)
{
    (void)state;
    char out[64];
    const struct {
        long long n;
        const char *want;
    } counts[] = {{0, "0"},
                  {999, "999"},
                  {1000, "1,000"},
                  {812345, "812,345"},
                  {1234567, "1,234,567"},
                  {-1234, "-1,234"}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        progress_count(out, sizeof out, counts[i].n);
        assert_string_equal(out, counts[i].want);
    }
    progress_duration(out, sizeof out, 45000);
    assert_string_equal(out, "45 s");
    progress_duration(out, sizeof out, 193000);
    assert_string_equal(out, "3 min 13 s");
    progress_duration(out, sizeof out, 242400);
    assert_string_equal(out, "4 min 2 s");
    progress_duration(out, sizeof out, 7500000);
    assert_string_equal(out, "2 h 5 min");
}

static void test_idle_and_small_flow_say_nothing(void **state)
{
    (void)state;
    progress p = {0};
    for (long long t = 0; t <= 120000; t += 5000)
        assert_null(sample(&p, t, 0, 0));
    /* a steady flow: a few pending at each poll, all of them published */
    long long done = 0;
    for (long long t = 125000; t <= 300000; t += 5000) {
        done += 500;
        assert_null(sample(&p, t, t % 3 == 0 ? 12 : 40, done));
    }
}

static void test_drain_reports_then_drained_once(void **state)
{
    (void)state;
    progress p = {0};
    assert_null(sample(&p, 0, 100000, 0));
    assert_null(sample(&p, 5000, 90000, 10000)); /* within the interval */
    assert_string_equal(sample(&p, 10000, 80000, 20000),
                        "backlog of public.outbox: 80,000 pending, 2,000 events/s over the last "
                        "10 s, about 40 s left");
    assert_null(sample(&p, 15000, 70000, 30000));
    assert_string_equal(sample(&p, 20000, 20000, 80000),
                        "backlog of public.outbox: 20,000 pending, 6,000 events/s over the last "
                        "10 s, about 3 s left");
    assert_string_equal(sample(&p, 25000, 0, 100000),
                        "backlog of public.outbox drained: 100,000 events in 25 s");
    for (long long t = 30000; t <= 90000; t += 5000)
        assert_null(sample(&p, t, 0, 100000));
}

static void test_burst_measured_from_its_start(void **state)
{
    (void)state;
    progress p = {0};
    assert_null(sample(&p, 0, 0, 0));
    assert_null(sample(&p, 5000, 0, 0));
    /* 16,000 came at once: not "not shrinking" against the idle sample */
    assert_null(sample(&p, 10000, 16000, 1000));
    assert_null(sample(&p, 15000, 10000, 7000));
    assert_string_equal(sample(&p, 20000, 5000, 12000),
                        "backlog of public.outbox: 5,000 pending, 1,100 events/s over the last "
                        "10 s, about 5 s left");
    assert_string_equal(sample(&p, 25000, 0, 17000),
                        "backlog of public.outbox drained: 17,000 events in 20 s");
    /* a burst gone before an interval's end: never a line */
    assert_null(sample(&p, 30000, 4000, 17000));
    assert_null(sample(&p, 35000, 0, 21000));
    for (long long t = 40000; t <= 80000; t += 5000)
        assert_null(sample(&p, t, 0, 21000));
}

static void test_stuck_or_growing_says_not_shrinking(void **state)
{
    (void)state;
    progress p = {0};
    assert_null(sample(&p, 0, 5000, 0));
    assert_null(sample(&p, 5000, 5000, 0));
    assert_string_equal(sample(&p, 10000, 5000, 0),
                        "backlog of public.outbox: 5,000 pending, 0 events/s over the last 10 s, "
                        "not shrinking");
    /* published, but producers add more */
    assert_string_equal(sample(&p, 20000, 7000, 3000),
                        "backlog of public.outbox: 7,000 pending, 300 events/s over the last 10 "
                        "s, not shrinking");

    /* a few events that nothing finishes are stuck too, then drained */
    progress q = {0};
    assert_null(sample(&q, 0, 3, 50));
    assert_null(sample(&q, 5000, 3, 50));
    assert_string_equal(sample(&q, 10000, 3, 50),
                        "backlog of public.outbox: 3 pending, 0 events/s over the last 10 s, not "
                        "shrinking");
    assert_null(sample(&q, 15000, 3, 50)); /* still nothing finished: not drained */
    assert_string_equal(sample(&q, 20000, 0, 53),
                        "backlog of public.outbox drained: 3 events in 20 s");
}

static void test_wal_bytes(void **state)
{
    (void)state;
    progress p = {.bytes = 1};
    assert_null(sample(&p, -5000, -1, 0)); /* the slot not checked yet: its events count */
    assert_null(sample(&p, 0, 80L << 20, 0));
    assert_string_equal(sample(&p, 10000, 50L << 20, 30000),
                        "backlog of public.outbox: 50 MB of WAL pending, 3,000 events/s over the "
                        "last 10 s, about 17 s left");
    assert_string_equal(sample(&p, 20000, 2L << 20, 50000),
                        "backlog of public.outbox: 2 MB of WAL pending, 2,000 events/s over the "
                        "last 10 s, about 1 s left");
    /* what the server wrote since the last confirm stays: drained all the same */
    assert_string_equal(sample(&p, 25000, 20 << 10, 60000),
                        "backlog of public.outbox drained: 60,000 events in 30 s");
    assert_null(sample(&p, 35000, 20 << 10, 60000));
    assert_null(sample(&p, 45000, 20 << 10, 60000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_idle_and_small_flow_say_nothing),
        cmocka_unit_test(test_drain_reports_then_drained_once),
        cmocka_unit_test(test_burst_measured_from_its_start),
        cmocka_unit_test(test_stuck_or_growing_says_not_shrinking),
        cmocka_unit_test(test_wal_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
