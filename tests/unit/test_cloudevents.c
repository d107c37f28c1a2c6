/* include/obx/cloudevents.h: the time format, template expansion and its
 * check, the attribute names per protocol binding, and both content modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "obx/cloudevents.h"

static const obx_message sample = {
    .token = 1,
    .event_id = "7f1d6a8e-1c2b-4d3e-9f00-0123456789ab",
    .event_type = "order.created",
    .aggregate_type = "Order",
    .aggregate_id = "o-42",
    .destination = "orders.Order",
    .payload = "{\"n\": 1, \"s\": \"a\\\"b\"}",
    .payload_len = 21,
    .content_type = "application/json",
    .created_at_us = 1714566896123456, /* 2024-05-01T12:34:56.123456Z */
    .attempt = 1,
};

static const char *attr(const obx_ce_event *ce, const char *name)
{
    for (size_t i = 0; i < ce->count; i++)
        if (strcmp(ce->attr[i].name, name) == 0)
            return ce->attr[i].value;
    return NULL;
}

static void test_expand(void **state)
{
    (void)state;
    char buf[128];
    assert_int_equal(
        obx_ce_expand("/x/${aggregate_type}/${aggregate_id}", &sample, buf, sizeof buf),
        (int)strlen("/x/Order/o-42"));
    assert_string_equal(buf, "/x/Order/o-42");
    obx_ce_expand("${event_type}|${event_id}|${destination}|${x}|$", &sample, buf, sizeof buf);
    assert_string_equal(buf, "order.created|7f1d6a8e-1c2b-4d3e-9f00-0123456789ab|orders.Order|${x}|$");
    /* too long: -1, the text cut and terminated */
    char small[8];
    assert_int_equal(obx_ce_expand("${event_type}", &sample, small, sizeof small), -1);
    assert_string_equal(small, "order.c");
}

static void test_template_check(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(
        obx_ce_template_check("a/${aggregate_type}/$x/${destination}", why, sizeof why), 0);
    assert_int_equal(obx_ce_template_check("a/${route_name}", why, sizeof why), -1);
    assert_non_null(strstr(why, "unknown placeholder ${route_name}"));
    assert_int_equal(obx_ce_template_check("a/${aggregate_type", why, sizeof why), -1);
    assert_non_null(strstr(why, "unclosed"));
}

static void test_binary_http(void **state)
{
    (void)state;
    obx_ce_config cfg = {OBX_CE_BINARY, "/orders/${aggregate_type}", "${event_type}",
                         "${aggregate_id}"};
    obx_ce_event ce;
    char err[128];
    assert_int_equal(obx_ce_fill(&ce, &cfg, NULL, &sample, OBX_CE_HTTP, err, sizeof err), 0);
    assert_string_equal(attr(&ce, "ce-specversion"), "1.0");
    assert_string_equal(attr(&ce, "ce-id"), sample.event_id);
    assert_string_equal(attr(&ce, "ce-source"), "/orders/Order");
    assert_string_equal(attr(&ce, "ce-type"), "order.created");
    assert_string_equal(attr(&ce, "ce-time"), "2024-05-01T12:34:56.123456Z");
    assert_string_equal(attr(&ce, "ce-subject"), "o-42");
    assert_string_equal(attr(&ce, "ce-aggregateid"), "o-42");
    assert_null(attr(&ce, "ce-aggregateseq"));    /* no host: not known */
    assert_null(attr(&ce, "ce-datacontenttype")); /* the protocol's content type carries it */
    assert_string_equal(ce.content_type, "application/json");
    assert_ptr_equal(ce.body, sample.payload);
    assert_null(ce.json);
    obx_ce_event_free(&ce);
}

/* RFC 3339 before 1970 and at the epoch: the fraction stays positive. */
static void test_time(void **state)
{
    (void)state;
    obx_ce_config cfg = {OBX_CE_BINARY, "s", "t", NULL};
    obx_message m = sample;
    obx_ce_event ce;
    char err[64];
    m.created_at_us = -1;
    obx_ce_fill(&ce, &cfg, NULL, &m, OBX_CE_KAFKA, err, sizeof err);
    assert_string_equal(attr(&ce, "ce_time"), "1969-12-31T23:59:59.999999Z");
    m.created_at_us = 0;
    obx_ce_fill(&ce, &cfg, NULL, &m, OBX_CE_KAFKA, err, sizeof err);
    assert_string_equal(attr(&ce, "ce_time"), "1970-01-01T00:00:00.000000Z");
    assert_null(attr(&ce, "ce_subject")); /* no template: no subject */
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(obx_ce_name(OBX_CE_A_TIME, OBX_CE_KAFKA), "ce_time");
    assert_string_equal(obx_ce_name(OBX_CE_A_TIME, OBX_CE_AMQP), "cloudEvents_time");
    assert_string_equal(obx_ce_name(OBX_CE_A_TIME, OBX_CE_MQTT), "time");
    assert_string_equal(obx_ce_name(OBX_CE_A_TIME, OBX_CE_HTTP), "ce-time");
    assert_null(obx_ce_name(OBX_CE_A_COUNT, OBX_CE_HTTP));
    /* every bare name is a valid attribute name: a-z and 0-9, at most 20 */
    for (int a = 0; a < OBX_CE_A_COUNT; a++) {
        const char *n = obx_ce_name(a, OBX_CE_MQTT);
        assert_true(strlen(n) <= 20);
        assert_int_equal(strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789"), strlen(n));
        const char *prefixes[] = {"ce_", "cloudEvents_", "", "ce-"};
        for (int b = 0; b <= OBX_CE_HTTP; b++) {
            char want[64];
            snprintf(want, sizeof want, "%s%s", prefixes[b], n);
            assert_string_equal(obx_ce_name(a, (obx_ce_binding)b), want);
        }
    }
}

static void test_structured(void **state)
{
    (void)state;
    obx_ce_config cfg = {OBX_CE_STRUCTURED, "/s", "com.example.${event_type}", NULL};
    obx_ce_event ce;
    char err[64];
    assert_int_equal(obx_ce_fill(&ce, &cfg, NULL, &sample, OBX_CE_AMQP, err, sizeof err), 0);
    assert_int_equal(ce.count, 0);
    assert_string_equal(ce.content_type, "application/cloudevents+json");
    assert_string_equal(ce.json,
                        "{\"specversion\":\"1.0\",\"id\":\"7f1d6a8e-1c2b-4d3e-9f00-0123456789ab\","
                        "\"source\":\"/s\",\"type\":\"com.example.order.created\","
                        "\"time\":\"2024-05-01T12:34:56.123456Z\",\"aggregatetype\":\"Order\","
                        "\"aggregateid\":\"o-42\",\"datacontenttype\":\"application/json\","
                        "\"data\":{\"n\": 1, \"s\": \"a\\\"b\"}}");
    assert_int_equal(ce.body_len, strlen(ce.json));
    obx_ce_event_free(&ce);

    /* bytes: data_base64; a quote in a value escaped */
    obx_message m = sample;
    m.payload = "\x00\xff\x10";
    m.payload_len = 3;
    m.content_type = "application/octet-stream";
    m.aggregate_id = "q\"1";
    assert_int_equal(obx_ce_fill(&ce, &cfg, NULL, &m, OBX_CE_HTTP, err, sizeof err), 0);
    assert_non_null(strstr(ce.json, "\"aggregateid\":\"q\\\"1\""));
    assert_non_null(strstr(ce.json, "\"datacontenttype\":\"application/octet-stream\","
                                    "\"data_base64\":\"AP8Q\"}"));
    obx_ce_event_free(&ce);

    /* an empty payload: no data at all */
    m.payload_len = 0;
    assert_int_equal(obx_ce_fill(&ce, &cfg, NULL, &m, OBX_CE_HTTP, err, sizeof err), 0);
    assert_null(strstr(ce.json, "data\""));
    obx_ce_event_free(&ce);
}

static void test_too_long(void **state)
{
    (void)state;
    char big[OBX_CE_TEXT_MAX + 8];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    obx_message m = sample;
    m.aggregate_id = big;
    obx_ce_config cfg = {OBX_CE_BINARY, "s", "t", "${aggregate_id}"};
    obx_ce_event ce;
    char err[128];
    assert_int_equal(obx_ce_fill(&ce, &cfg, NULL, &m, OBX_CE_MQTT, err, sizeof err), -1);
    assert_non_null(strstr(err, "ce_subject"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand),      cmocka_unit_test(test_template_check),
        cmocka_unit_test(test_binary_http), cmocka_unit_test(test_time),
        cmocka_unit_test(test_names),       cmocka_unit_test(test_structured),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
