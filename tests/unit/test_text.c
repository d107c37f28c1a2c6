/*
 * Texts written to the database are valid UTF-8: each invalid byte becomes
 * U+FFFD (PostgreSQL's rules: no overlong forms, surrogates or code points
 * past U+10FFFF), and a cut never splits a character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/text.h"

#define FFFD "\xEF\xBF\xBD"

static void expect_copy(const char *src, const char *want)
{
    char out[64];
    text_copy(out, sizeof out, src);
    assert_string_equal(out, want);
    assert_true(text_valid(out, strlen(out)));
}

static void test_valid_text_is_copied_as_is(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "",
        "plain ascii",
        "caf\xC3\xA9",               /* 2 bytes */
        "\xE2\x82\xAC 5",            /* 3 bytes */
        "\xF0\x9F\x98\x80",          /* 4 bytes */
        "\xF4\x8F\xBF\xBF",          /* U+10FFFF, the last code point */
        "\xED\x9F\xBF \xEE\x80\x80", /* either side of the surrogates */
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        assert_true(text_valid(valid[i], strlen(valid[i])));
        expect_copy(valid[i], valid[i]);
    }
}

/* Each byte of an invalid sequence is replaced on its own. */
static void test_invalid_bytes_are_replaced(void **state)
{
    (void)state;
    static const struct {
        const char *src, *want;
    } cases[] = {
        {"a\x80z", "a" FFFD "z"},                           /* stray continuation */
        {"\xFF\xFE", FFFD FFFD},                            /* never valid */
        {"\xF8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD}, /* 5-byte form */
        {"ab\xE2\x82", "ab" FFFD FFFD},                     /* truncated at the end */
        {"\xC3(", FFFD "("},                                /* lead without continuation */
        {"\xC0\xAF", FFFD FFFD},                            /* overlong '/' */
        {"\xE0\x80\xAF", FFFD FFFD FFFD},                   /* overlong, 3 bytes */
        {"\xF0\x80\x80\xAF", FFFD FFFD FFFD FFFD},          /* overlong, 4 bytes */
        {"\xED\xA0\x80", FFFD FFFD FFFD},                   /* surrogate U+D800 */
        {"\xED\xBF\xBF", FFFD FFFD FFFD},                   /* surrogate U+DFFF */
        {"\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD},          /* U+110000 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_false(text_valid(cases[i].src, strlen(cases[i].src)));
        expect_copy(cases[i].src, cases[i].want);
    }
}

static void test_nul_is_not_valid_text(void **state)
{
    (void)state;
    assert_false(text_valid("a\0b", 3));
    assert_true(text_valid("a\0b", 1));
    assert_true(text_valid("", 0));
}

/* Cut at the buffer: whole characters only, the replacement included. */
static void test_cut_on_character_boundary(void **state)
{
    (void)state;
    char out[8];
    memset(out, 'x', sizeof out);
    text_copy(out, 5, "ab\xE2\x82\xAC"); /* 5 bytes do not fit in 5 with the NUL */
    assert_string_equal(out, "ab");
    text_copy(out, 6, "ab\xE2\x82\xAC");
    assert_string_equal(out, "ab\xE2\x82\xAC");
    text_copy(out, 4, "a\xFF"); /* the replacement is 3 bytes */
    assert_string_equal(out, "a");
    text_copy(out, 5, "a\xFF");
    assert_string_equal(out, "a" FFFD);
    text_copy(out, 1, "abc");
    assert_string_equal(out, "");
}

static void test_zero_capacity_writes_nothing(void **state)
{
    (void)state;
    char out[2] = {'x', 'y'};
    assert_ptr_equal(text_copy(out, 0, "abc"), out);
    assert_int_equal(out[0], 'x');
}

static void test_null_source_is_empty(void **state)
{
    (void)state;
    char out[4] = "zzz";
    text_copy(out, sizeof out, NULL);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_text_is_copied_as_is),
        cmocka_unit_test(test_invalid_bytes_are_replaced),
        cmocka_unit_test(test_nul_is_not_valid_text),
        cmocka_unit_test(test_cut_on_character_boundary),
        cmocka_unit_test(test_zero_capacity_writes_nothing),
        cmocka_unit_test(test_null_source_is_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
