/* include/obx/envelope.h: the fields, their order and names in each style,
 * the mask, the formatted created_at and attempt, NULL texts, and the fields
 * a 1.2 host gives beside the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "obx/envelope.h"

static obx_message envelope_message(void)
{
    obx_message m;
    memset(&m, 0, sizeof m);
    m.event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01";
    m.event_type = "OrderPlaced";
    m.aggregate_type = "order";
    m.aggregate_id = "42";
    m.destination = "orders";
    m.content_type = "application/json";
    m.created_at_us = 1700000000123456LL; /* 2023-11-14T22:13:20.123456Z */
    m.attempt = 4294967295u;
    return m;
}

static void test_snake_standard(void **state)
{
    (void)state;
    obx_message m = envelope_message();
    obx_envelope env;
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD), 5);
    const char *want[5][2] = {{"event_id", "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01"},
                              {"event_type", "OrderPlaced"},
                              {"aggregate_type", "order"},
                              {"aggregate_id", "42"},
                              {"created_at", "2023-11-14T22:13:20.123456Z"}};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(env.field[i].field, 1u << i);
        assert_string_equal(env.field[i].name, want[i][0]);
        assert_string_equal(env.field[i].value, want[i][1]);
    }
    /* values of the message are the message's own memory, not copies */
    assert_ptr_equal(env.field[0].value, m.event_id);
    assert_ptr_equal(env.field[4].value, env.created_at);
}

static void test_http_all(void **state)
{
    (void)state;
    obx_message m = envelope_message();
    obx_envelope env;
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_HTTP, OBX_ENVELOPE_ALL), 6);
    const char *names[6] = {"X-Event-Id",     "X-Event-Type", "X-Aggregate-Type",
                            "X-Aggregate-Id", "X-Created-At", "X-Attempt"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(env.field[i].name, names[i]);
    assert_string_equal(env.field[5].value, "4294967295"); /* the largest attempt fits */
}

static void test_kebab_names(void **state)
{
    (void)state;
    assert_string_equal(obx_envelope_name(OBX_ENVELOPE_AGGREGATE_ID, OBX_ENVELOPE_KEBAB),
                        "aggregate-id");
    assert_string_equal(obx_envelope_name(OBX_ENVELOPE_CREATED_AT, OBX_ENVELOPE_KEBAB),
                        "created-at");
    /* not one known bit: no name; a style out of range reads as snake */
    assert_null(obx_envelope_name(0, OBX_ENVELOPE_SNAKE));
    assert_null(obx_envelope_name(OBX_ENVELOPE_EVENT_ID | OBX_ENVELOPE_ATTEMPT, OBX_ENVELOPE_HTTP));
    assert_null(obx_envelope_name(0x100u, OBX_ENVELOPE_HTTP));
    assert_string_equal(obx_envelope_name(OBX_ENVELOPE_AGGREGATE_SEQ, OBX_ENVELOPE_HTTP),
                        "X-Aggregate-Seq");
    assert_string_equal(obx_envelope_name(OBX_ENVELOPE_EVENT_ID, (obx_envelope_style)7),
                        "event_id");
}

static void test_mask_keeps_order(void **state)
{
    (void)state;
    obx_message m = envelope_message();
    obx_envelope env;
    unsigned mask = OBX_ENVELOPE_ATTEMPT | OBX_ENVELOPE_EVENT_TYPE;
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, mask), 2);
    assert_string_equal(env.field[0].name, "event_type");
    assert_string_equal(env.field[1].name, "attempt");
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, 0), 0);
    /* bits beyond the known ones are ignored; without the host, the 1.2 fields too */
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, ~0u), 6);
}

static void test_far_times_and_nulls(void **state)
{
    (void)state;
    obx_message m = envelope_message();
    obx_envelope env;
    m.event_type = NULL; /* a host breaking the contract: "" rather than NULL */
    m.created_at_us = INT64_MIN;
    assert_int_equal(obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD), 5);
    assert_string_equal(env.field[1].value, "");
    char want[48];
    obx_format_time(INT64_MIN, want, sizeof want);
    assert_true(strlen(want) < sizeof env.created_at - 1); /* never cut */
    assert_string_equal(env.field[4].value, want);
    m.created_at_us = INT64_MAX;
    obx_envelope_fill(&env, &m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_CREATED_AT);
    obx_format_time(INT64_MAX, want, sizeof want);
    assert_true(strlen(want) < sizeof env.created_at - 1);
    assert_string_equal(env.field[0].value, want);
}

/* A host of 1.2 hands the extension of the messages of its array only. */
static const obx_message *ext_array;
static obx_message_ext ext_of[2];
static const obx_message_ext *ext_lookup(void *ctx, const obx_message *m)
{
    (void)ctx;
    return m >= ext_array && m < ext_array + 2 ? &ext_of[m - ext_array] : NULL;
}

static void test_host_fields(void **state)
{
    (void)state;
    obx_message ms[2] = {envelope_message(), envelope_message()};
    ext_array = ms;
    ext_of[0] = (obx_message_ext){sizeof(obx_message_ext), 9223372036854775807LL, "v2"};
    ext_of[1] = (obx_message_ext){sizeof(obx_message_ext), 0, NULL}; /* neither known */
    obx_host host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.message_ext = ext_lookup;
    obx_envelope env;
    assert_int_equal(
        obx_envelope_fill_host(&env, &host, &ms[0], OBX_ENVELOPE_KEBAB, OBX_ENVELOPE_STANDARD), 7);
    assert_string_equal(env.field[5].name, "aggregate-seq");
    assert_string_equal(env.field[5].value, "9223372036854775807");
    assert_string_equal(env.field[6].name, "event-version");
    assert_string_equal(env.field[6].value, "v2");
    assert_int_equal(
        obx_envelope_fill_host(&env, &host, &ms[1], OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_ALL), 6);
    obx_message copy = ms[0]; /* not of the array: nothing found */
    assert_int_equal(
        obx_envelope_fill_host(&env, &host, &copy, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_ALL), 6);
    host.struct_size = (uint32_t)offsetof(obx_host, message_ext); /* a 1.1 host */
    assert_int_equal(
        obx_envelope_fill_host(&env, &host, &ms[0], OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_ALL), 6);
    assert_int_equal(
        obx_envelope_fill_host(&env, NULL, &ms[0], OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_ALL), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snake_standard),      cmocka_unit_test(test_http_all),
        cmocka_unit_test(test_kebab_names),         cmocka_unit_test(test_mask_keeps_order),
        cmocka_unit_test(test_far_times_and_nulls), cmocka_unit_test(test_host_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
