/* include/obx/driver_util.h: the time format against the C library's
 * gmtime_r, and the aggregate hash's separation of type and id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "obx/driver_util.h"

/* What the drivers printed before the helper, with gmtime_r. */
static void reference(int64_t us, char *buf, size_t size)
{
    time_t secs = (time_t)(us / 1000000);
    long micros = (long)(us % 1000000);
    if (micros < 0) {
        micros += 1000000;
        secs--;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%06ldZ", micros);
}

static void test_format_time_matches_gmtime(void **state)
{
    (void)state;
    const int64_t fixed[] = {0,
                             1,
                             -1,
                             999999,
                             -1000000,
                             951782400000000LL /* 2000-02-29 */,
                             4102444799999999LL /* 2099-12-31 end */,
                             -2208988800000000LL /* 1900 */,
                             1700000000123456LL,
                             253402300799999999LL /* 9999-12-31 end */,
                             253402300800000000LL /* 10000: printed, not by digits */};
    char got[40], want[40];
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        obx_format_time(fixed[i], got, sizeof got);
        reference(fixed[i], want, sizeof want);
        assert_string_equal(got, want);
    }
    /* every day of 400 years around the epoch, at odd times of day */
    for (int64_t day = -73048; day < 73048; day += 1) {
        int64_t us = day * 86400000000LL + (day % 86400) * 1000003LL;
        obx_format_time(us, got, sizeof got);
        reference(us, want, sizeof want);
        assert_string_equal(got, want);
    }
    assert_int_equal(strlen(got), 27);
}

static void test_format_time_truncates(void **state)
{
    (void)state;
    char small[11];
    obx_format_time(0, small, sizeof small);
    assert_string_equal(small, "1970-01-01");
}

static void test_aggregate_hash(void **state)
{
    (void)state;
    obx_message a = {.aggregate_type = "ab", .aggregate_id = "c"};
    obx_message b = {.aggregate_type = "a", .aggregate_id = "bc"};
    obx_message c = {.aggregate_type = "ab", .aggregate_id = "c"};
    assert_int_not_equal(obx_aggregate_hash(&a), obx_aggregate_hash(&b));
    assert_int_equal(obx_aggregate_hash(&a), obx_aggregate_hash(&c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_time_matches_gmtime),
        cmocka_unit_test(test_format_time_truncates),
        cmocka_unit_test(test_aggregate_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
