/*
 * Array literals for the batched statements: text elements are quoted, so
 * commas, braces, quotes, backslashes, empty strings and the word NULL
 * reach PostgreSQL as the text they are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "db/pgarray.h"

/* The literal of values[0..n), all quoted or none. */
static void expect_literal(const char *const *values, size_t n, int quoted, const char *want)
{
    pgarray a;
    pgarray_init(&a);
    for (size_t i = 0; i < n; i++)
        pgarray_add(&a, values[i], quoted);
    assert_string_equal(pgarray_text(&a), want);
    assert_int_equal(a.count, n);
    pgarray_free(&a);
}

static void test_empty_array(void **state)
{
    (void)state;
    expect_literal(NULL, 0, 0, "{}");
}

static void test_numbers_are_not_quoted(void **state)
{
    (void)state;
    const char *ids[] = {"1", "-2", "9223372036854775807"};
    expect_literal(ids, 3, 0, "{1,-2,9223372036854775807}");
}

static void test_text_is_quoted_and_escaped(void **state)
{
    (void)state;
    static const struct {
        const char *value, *want;
    } cases[] = {
        {"plain", "{\"plain\"}"},
        {"", "{\"\"}"},         /* empty, not a missing element */
        {"NULL", "{\"NULL\"}"}, /* the text, not SQL NULL */
        {"null", "{\"null\"}"},
        {"a,b", "{\"a,b\"}"},                   /* not two elements */
        {"{x}", "{\"{x}\"}"},                   /* not a nested array */
        {"say \"hi\"", "{\"say \\\"hi\\\"\"}"}, /* quote escaped */
        {"C:\\dir\\", "{\"C:\\\\dir\\\\\"}"},   /* backslash escaped */
        {" spaced ", "{\" spaced \"}"},         /* spaces kept */
        {"caf\xC3\xA9", "{\"caf\xC3\xA9\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_literal(&cases[i].value, 1, 1, cases[i].want);
}

static void test_several_quoted_elements(void **state)
{
    (void)state;
    const char *errors[] = {"", "x,y", "\\\""};
    expect_literal(errors, 3, 1, "{\"\",\"x,y\",\"\\\\\\\"\"}");
}

/* pgarray_text may be read, then more added (the brace is rewritten). */
static void test_text_then_add_more(void **state)
{
    (void)state;
    pgarray a;
    pgarray_init(&a);
    pgarray_add(&a, "1", 0);
    assert_string_equal(pgarray_text(&a), "{1}");
    pgarray_add(&a, "2", 0);
    assert_string_equal(pgarray_text(&a), "{1,2}");
    pgarray_free(&a);
}

/* Past the first buffer: every element kept, in order. */
static void test_grows_past_initial_buffer(void **state)
{
    (void)state;
    pgarray a;
    pgarray_init(&a);
    char want[8192] = "{", item[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(item, sizeof item, "%d", i);
        pgarray_add(&a, item, 0);
        strcat(want, i ? "," : "");
        strcat(want, item);
    }
    strcat(want, "}");
    assert_string_equal(pgarray_text(&a), want);
    pgarray_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_array),
        cmocka_unit_test(test_numbers_are_not_quoted),
        cmocka_unit_test(test_text_is_quoted_and_escaped),
        cmocka_unit_test(test_several_quoted_elements),
        cmocka_unit_test(test_text_then_add_more),
        cmocka_unit_test(test_grows_past_initial_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
