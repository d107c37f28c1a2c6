/*
 * The retry policy as a table: what each verdict and status becomes, how
 * attempts meet max_attempts, the backoff and its jitter, and the error
 * text written to the row (valid UTF-8, cut on a character boundary).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/text.h"
#include "event/outcome.h"

#define PAUSE_MS 7000

/* max 3 attempts; backoff 100, 200, 400, 800, then 1000; no jitter */
static const retry_policy policy = {3, 100, 1000, 2.0, 0.0};

static decision decide(verdict_kind kind, obx_status status, unsigned attempt, int after_failure)
{
    verdict v = {kind, status, 7, "broker said no"};
    decision d;
    memset(&d, 0x5a, sizeof d); /* every field must be written */
    outcome_decide(&policy, &v, attempt, after_failure, PAUSE_MS, 0.5, &d);
    return d;
}

static void test_decision_table(void **state)
{
    (void)state;
    static const struct {
        verdict_kind kind;
        obx_status status;
        unsigned attempt;
        int outcome;
        long long delay_ms;
        const char *error;
    } table[] = {
        {VERDICT_COMPLETED, OBX_OK, 1, OUTCOME_PUBLISHED, 0, ""},
        {VERDICT_COMPLETED, OBX_OK, 3, OUTCOME_PUBLISHED, 0, ""},
        {VERDICT_COMPLETED, OBX_RETRIABLE, 1, OUTCOME_RETRY, 100,
         "retriable: broker said no (code 7)"},
        {VERDICT_COMPLETED, OBX_RETRIABLE, 2, OUTCOME_RETRY, 200,
         "retriable: broker said no (code 7)"},
        {VERDICT_COMPLETED, OBX_RETRIABLE, 3, OUTCOME_DEAD, 0,
         "gave up after 3 attempts: broker said no (code 7)"},
        {VERDICT_COMPLETED, OBX_PERMANENT, 1, OUTCOME_DEAD, 0, "broker said no (code 7)"},
        {VERDICT_COMPLETED, OBX_FATAL, 1, OUTCOME_DEFER, PAUSE_MS,
         "fatal: broker said no (code 7)"},
        {VERDICT_COMPLETED, OBX_UNAVAILABLE, 1, OUTCOME_DEFER, PAUSE_MS,
         "unavailable: broker said no (code 7)"},
        {VERDICT_REFUSED, OBX_RETRIABLE, 1, OUTCOME_RETRY, 100,
         "refused, retriable: broker said no (code 7)"},
        {VERDICT_REFUSED, OBX_RETRIABLE, 3, OUTCOME_DEAD, 0,
         "gave up after 3 attempts, refused: broker said no (code 7)"},
        {VERDICT_REFUSED, OBX_PERMANENT, 1, OUTCOME_DEAD, 0, "refused: broker said no (code 7)"},
        {VERDICT_REFUSED, OBX_FATAL, 1, OUTCOME_DEFER, PAUSE_MS, "fatal: broker said no (code 7)"},
        {VERDICT_REFUSED, OBX_UNAVAILABLE, 1, OUTCOME_DEFER, PAUSE_MS,
         "unavailable: broker said no (code 7)"},
        /* the worker marks a row that cannot become a message PERMANENT */
        {VERDICT_BAD_ROW, OBX_PERMANENT, 1, OUTCOME_DEAD, 0, "broker said no (code 7)"},
        {VERDICT_ABORTED, OBX_OK, 1, OUTCOME_RELEASE, 0, ""},
        {VERDICT_NOT_SENT, OBX_OK, 1, OUTCOME_DEFER, PAUSE_MS, "not sent: broker said no (code 7)"},
        /* a drop route's event is done, whatever its attempt */
        {VERDICT_DROPPED, OBX_OK, 1, OUTCOME_PUBLISHED, 0, ""},
        {VERDICT_DROPPED, OBX_OK, 3, OUTCOME_PUBLISHED, 0, ""},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        decision d = decide(table[i].kind, table[i].status, table[i].attempt, 0);
        if (d.outcome != table[i].outcome || d.delay_ms != table[i].delay_ms ||
            strcmp(d.error, table[i].error) != 0)
            fail_msg("row %zu (kind %d, status %d, attempt %u): got outcome %d, delay %lld, "
                     "\"%s\"; want %d, %lld, \"%s\"",
                     i, table[i].kind, table[i].status, table[i].attempt, d.outcome, d.delay_ms,
                     d.error, table[i].outcome, table[i].delay_ms, table[i].error);
    }
}

/* A status outside the contract is the message's fault: retried, then dead. */
static void test_out_of_range_status_is_retriable(void **state)
{
    (void)state;
    static const int statuses[] = {OBX_STATUS_MAX + 1, 99, -1};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        for (verdict_kind k = VERDICT_COMPLETED; k <= VERDICT_REFUSED; k++) {
            decision d = decide(k, (obx_status)statuses[i], 1, 0);
            assert_int_equal(d.outcome, OUTCOME_RETRY);
            assert_int_equal(d.delay_ms, 100);
            assert_non_null(strstr(d.error, "retriable: broker said no"));
            d = decide(k, (obx_status)statuses[i], 3, 0);
            assert_int_equal(d.outcome, OUTCOME_DEAD);
            assert_non_null(strstr(d.error, "gave up after 3 attempts"));
        }
    }
}

/* Behind an unpublished event of its aggregate, nothing is marked. */
static void test_after_failure_releases_whatever_the_verdict(void **state)
{
    (void)state;
    for (verdict_kind k = VERDICT_COMPLETED; k <= VERDICT_NOT_SENT; k++)
        for (int s = -1; s <= OBX_STATUS_MAX + 1; s++) {
            decision d = decide(k, (obx_status)s, 1, 1);
            assert_int_equal(d.outcome, OUTCOME_RELEASE);
            assert_int_equal(d.delay_ms, 0);
            assert_string_equal(d.error, "");
        }
}

/* Aborted at shutdown: released; never sent: deferred; whatever the status. */
static void test_aborted_and_not_sent_ignore_status(void **state)
{
    (void)state;
    for (int s = -1; s <= OBX_STATUS_MAX + 1; s++) {
        decision d = decide(VERDICT_ABORTED, (obx_status)s, 5, 0);
        assert_int_equal(d.outcome, OUTCOME_RELEASE);
        d = decide(VERDICT_NOT_SENT, (obx_status)s, 5, 0);
        assert_int_equal(d.outcome, OUTCOME_DEFER);
        assert_int_equal(d.delay_ms, PAUSE_MS);
    }
}

static void test_attempts_against_max(void **state)
{
    (void)state;
    retry_policy p = policy;
    p.max_attempts = 5;
    verdict v = {VERDICT_COMPLETED, OBX_RETRIABLE, 0, "later"};
    decision d;
    for (unsigned attempt = 1; attempt < 5; attempt++) {
        outcome_decide(&p, &v, attempt, 0, PAUSE_MS, 0.0, &d);
        assert_int_equal(d.outcome, OUTCOME_RETRY);
    }
    for (unsigned attempt = 5; attempt < 8; attempt++) { /* max lowered since: still dead */
        outcome_decide(&p, &v, attempt, 0, PAUSE_MS, 0.0, &d);
        assert_int_equal(d.outcome, OUTCOME_DEAD);
    }
    p.max_attempts = 1; /* no retry at all */
    outcome_decide(&p, &v, 1, 0, PAUSE_MS, 0.0, &d);
    assert_int_equal(d.outcome, OUTCOME_DEAD);
    assert_string_equal(d.error, "gave up after 1 attempts: later");
}

/* An outage is not the message's fault: deferred past max_attempts. */
static void test_deferral_costs_no_attempt(void **state)
{
    (void)state;
    decision d = decide(VERDICT_COMPLETED, OBX_UNAVAILABLE, 100, 0);
    assert_int_equal(d.outcome, OUTCOME_DEFER);
    assert_int_equal(d.delay_ms, PAUSE_MS);
    d = decide(VERDICT_COMPLETED, OBX_FATAL, 100, 0);
    assert_int_equal(d.outcome, OUTCOME_DEFER);
}

static void test_backoff_grows_then_caps(void **state)
{
    (void)state;
    static const long long want[] = {100, 100, 200, 400, 800, 1000, 1000};
    for (unsigned attempt = 0; attempt < 7; attempt++)
        assert_int_equal(outcome_backoff_ms(&policy, attempt, 0.5), want[attempt]);
    assert_int_equal(outcome_backoff_ms(&policy, 1000, 0.5), 1000);
}

/* The jitter takes off up to jitter x the delay, never adds. */
static void test_jitter_bounds(void **state)
{
    (void)state;
    retry_policy p = {10, 1000, 60000, 2.0, 0.25};
    static const double draws[] = {0.0, 0.1, 0.5, 0.9, 0.999999};
    for (unsigned attempt = 1; attempt <= 8; attempt++) {
        long long base = outcome_backoff_ms(&p, attempt, 0.0);
        for (size_t i = 0; i < sizeof draws / sizeof draws[0]; i++) {
            long long d = outcome_backoff_ms(&p, attempt, draws[i]);
            assert_in_range(d, base - base / 4, base);
        }
    }
    assert_int_equal(outcome_backoff_ms(&p, 1, 0.0), 1000);
    p.jitter = 1.0; /* full jitter: anywhere down to 0 */
    assert_in_range(outcome_backoff_ms(&p, 3, 0.999999), 0, 1);
}

static void test_retry_delay_is_the_backoff(void **state)
{
    (void)state;
    retry_policy p = {10, 1000, 60000, 3.0, 0.5};
    verdict v = {VERDICT_COMPLETED, OBX_RETRIABLE, 0, "x"};
    decision d;
    outcome_decide(&p, &v, 4, 0, PAUSE_MS, 0.3, &d);
    assert_int_equal(d.outcome, OUTCOME_RETRY);
    assert_int_equal(d.delay_ms, outcome_backoff_ms(&p, 4, 0.3));
}

static void test_error_without_detail_or_code(void **state)
{
    (void)state;
    verdict v = {VERDICT_COMPLETED, OBX_PERMANENT, 0, NULL};
    decision d;
    outcome_decide(&policy, &v, 1, 0, PAUSE_MS, 0.0, &d);
    assert_string_equal(d.error, "no reason given");
    v.detail = "";
    v.status = OBX_UNAVAILABLE;
    outcome_decide(&policy, &v, 1, 0, PAUSE_MS, 0.0, &d);
    assert_string_equal(d.error, "unavailable: no reason given");
}

static void test_error_is_valid_utf8(void **state)
{
    (void)state;
    verdict v = {VERDICT_COMPLETED, OBX_PERMANENT, 0, "bad \xff\xfe bytes \xc3"};
    decision d;
    outcome_decide(&policy, &v, 1, 0, PAUSE_MS, 0.0, &d);
    assert_true(text_valid(d.error, strlen(d.error)));
    assert_string_equal(d.error, "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \xEF\xBF\xBD");
}

/* A long detail of 3-byte characters: cut below the buffer, never mid-character. */
static void test_long_error_cut_on_character_boundary(void **state)
{
    (void)state;
    char detail[3 * 400 + 1] = "";
    for (int i = 0; i < 400; i++)
        strcat(detail, "\xE2\x82\xAC"); /* U+20AC */
    for (int shift = 0; shift < 3; shift++) {
        char shifted[sizeof detail + 2]; /* moves the cut across the character */
        snprintf(shifted, sizeof shifted, "%.*s%s", shift, "ab", detail);
        verdict v = {VERDICT_COMPLETED, OBX_FATAL, 0, shifted};
        decision d;
        outcome_decide(&policy, &v, 1, 0, PAUSE_MS, 0.0, &d);
        size_t n = strlen(d.error);
        assert_in_range(n, OUTCOME_ERROR_MAX - 4, OUTCOME_ERROR_MAX - 1);
        assert_true(text_valid(d.error, n));
        assert_memory_equal(d.error, "fatal: ", 7);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decision_table),
        cmocka_unit_test(test_out_of_range_status_is_retriable),
        cmocka_unit_test(test_after_failure_releases_whatever_the_verdict),
        cmocka_unit_test(test_aborted_and_not_sent_ignore_status),
        cmocka_unit_test(test_attempts_against_max),
        cmocka_unit_test(test_deferral_costs_no_attempt),
        cmocka_unit_test(test_backoff_grows_then_caps),
        cmocka_unit_test(test_jitter_bounds),
        cmocka_unit_test(test_retry_delay_is_the_backoff),
        cmocka_unit_test(test_error_without_detail_or_code),
        cmocka_unit_test(test_error_is_valid_utf8),
        cmocka_unit_test(test_long_error_cut_on_character_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
