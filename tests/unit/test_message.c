/*
 * Claimed rows into messages: destination templates, the first matching
 * route, the destination override, the headers object, and the rows that
 * cannot become a message (each with a readable reason).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "claim_result.h"
#include "event/message.h"
#include "event/route.h"
#include "poll/batch.h"

static arena scratch;
static char err[512];
static batch held; /* the last built message points into its claim result */

static int free_scratch(void **state)
{
    (void)state;
    arena_free(&scratch);
    batch_free(&held);
    memset(&held, 0, sizeof held);
    return 0;
}

/* Builds the message of res's one row as poll mode does (batch_message);
 * res is owned from now on. */
static int build_from(const relay_config *cfg, PGresult *res, payload_kind kind, obx_message *msg,
                      size_t *output)
{
    if (!held.rows)
        batch_init(&held, 4);
    batch_clear(&held);
    batch_take(&held, res);
    message_source src = {cfg, kind, &scratch};
    const cfg_route *route = NULL;
    err[0] = '\0';
    obx_message_ext ext;
    int rc = batch_message(&held, 0, &src, msg, &ext, &route, err, sizeof err);
    if (rc == 0)
        *output = route->output_index;
    return rc;
}

/* ---- destination templates ---- */

static const obx_message order = {.event_id = "ev-1",
                                  .event_type = "order.paid",
                                  .aggregate_type = "Order",
                                  .aggregate_id = "42"};

static void expect_render(const char *tmpl, const char *want)
{
    const char *out = NULL;
    if (route_render(tmpl, &order, &scratch, &out, err, sizeof err) != 0)
        fail_msg("\"%s\" refused: %s", tmpl, err);
    assert_string_equal(out, want);
}

static void test_render_fields(void **state)
{
    (void)state;
    expect_render("${event_type}", "order.paid");
    expect_render("outbox.${aggregate_type}", "outbox.Order");
    expect_render("${aggregate_type}/${aggregate_id}/${event_id}", "Order/42/ev-1");
    expect_render("${aggregate_id}${aggregate_id}", "4242");
}

/* Text that is no field reference is copied as written. */
static void test_render_literal_text(void **state)
{
    (void)state;
    expect_render("", "");
    expect_render("$x {event_type} $ {}", "$x {event_type} $ {}");
    expect_render("open ${event_type", "open ${event_type");
    expect_render("a$${event_type}", "a$order.paid");
}

/* Without a reference the template itself is the destination. */
static void test_render_constant_is_not_copied(void **state)
{
    (void)state;
    const char *tmpl = "orders", *out = NULL;
    assert_int_equal(route_render(tmpl, &order, &scratch, &out, err, sizeof err), 0);
    assert_ptr_equal(out, tmpl);
}

/* A value longer than the first buffer. */
static void test_render_long_value(void **state)
{
    (void)state;
    char id[2001];
    memset(id, 'x', 2000);
    id[2000] = '\0';
    obx_message m = order;
    m.aggregate_id = id;
    const char *out = NULL;
    assert_int_equal(
        route_render("a.${aggregate_id}.${aggregate_id}", &m, &scratch, &out, err, sizeof err), 0);
    assert_int_equal(strlen(out), 2 + 2000 + 1 + 2000);
    assert_memory_equal(out + 2, id, 2000);
}

static void test_render_refusals(void **state)
{
    (void)state;
    const char *out = NULL;
    assert_int_equal(route_render("t.${payload}", &order, &scratch, &out, err, sizeof err), -1);
    assert_string_equal(err, "destination template \"t.${payload}\" names payload, which is NULL "
                             "or unknown");
    obx_message m = order;
    m.aggregate_id = "";
    assert_int_equal(route_render("t.${aggregate_id}", &m, &scratch, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "names aggregate_id, which is empty"));
}

/* ---- building from a claimed row ---- */

/* Two outputs; orders to output 1 by aggregate id, users by name, the rest to 0. */
static cfg_route routes[] = {
    {.event_type = "order.*",
     .aggregate_type = "Order",
     .output = "b",
     .output_index = 1,
     .destination = "orders.${aggregate_id}",
     .line = 10},
    {.event_type = "*",
     .aggregate_type = "User",
     .output = "a",
     .output_index = 0,
     .destination = "users",
     .line = 11},
    {.event_type = "*",
     .aggregate_type = "*",
     .output = "a",
     .output_index = 0,
     .destination = "${event_type}",
     .line = 12},
};

static relay_config config(void)
{
    relay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.path = "relay.conf";
    cfg.max_payload_bytes = 16;
    cfg.routes = routes;
    cfg.route_count = 3;
    return cfg;
}

/* Builds a message from row; returns message_build's result. */
static int build(claim_row row, payload_kind kind, obx_message *msg, size_t *output)
{
    relay_config cfg = config();
    *output = 99;
    return build_from(&cfg, claim_result(&row, 1), kind, msg, output);
}

static void test_build_fields(void **state)
{
    (void)state;
    claim_row row = claim_row_of("7", "Order", "42", "order.paid");
    row.v[ROW_EVENT_ID] = "0b6f1c9e";
    row.v[ROW_PAYLOAD] = "{\"total\":5}";
    row.v[ROW_CREATED_US] = "1700000000123456";
    row.v[ROW_ATTEMPTS] = "2";
    obx_message m;
    size_t output;
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(output, 1);
    assert_string_equal(m.event_id, "0b6f1c9e");
    assert_string_equal(m.event_type, "order.paid");
    assert_string_equal(m.aggregate_type, "Order");
    assert_string_equal(m.aggregate_id, "42");
    assert_string_equal(m.destination, "orders.42");
    assert_int_equal(m.payload_len, 11);
    assert_memory_equal(m.payload, "{\"total\":5}", 11);
    assert_string_equal(m.content_type, "application/json");
    assert_true(m.created_at_us == 1700000000123456LL);
    assert_int_equal(m.attempt, 3);
    assert_int_equal(m.header_count, 0);
    assert_null(m.headers);
}

/* The first route whose globs match both types wins. */
static void test_build_routes(void **state)
{
    (void)state;
    static const struct {
        const char *aggregate_type, *event_type, *destination;
        size_t output;
    } cases[] = {
        {"Order", "order.created", "orders.1", 1},
        {"Order", "shipment.sent", "shipment.sent", 0}, /* event type not order.* */
        {"User", "order.created", "users", 0},          /* aggregate type not Order */
        {"Invoice", "invoice.sent", "invoice.sent", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        obx_message m;
        size_t output;
        claim_row row = claim_row_of("1", cases[i].aggregate_type, "1", cases[i].event_type);
        assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
        assert_string_equal(m.destination, cases[i].destination);
        assert_int_equal(output, cases[i].output);
    }
}

/* A destination column wins over the route's template, and is not a template. */
static void test_build_destination_override(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_DESTINATION] = "special.${event_type}";
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_string_equal(m.destination, "special.${event_type}");
    assert_int_equal(output, 1); /* the route still picks the output */
    row.v[ROW_DESTINATION] = ""; /* empty: as NULL */
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_string_equal(m.destination, "orders.1");
}

static const char *header(const obx_message *m, const char *key)
{
    for (size_t i = 0; i < m->header_count; i++)
        if (strcmp(m->headers[i].key, key) == 0)
            return m->headers[i].value;
    return NULL;
}

static void test_build_headers(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_HEADERS] = "{\"traceparent\": \"00-ab\", \"n\": 5, \"x\": 1.5, \"ok\": true, "
                         "\"empty\": \"\", \"caf\xC3\xA9\": \"\xE2\x82\xAC\"}";
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(m.header_count, 6);
    assert_string_equal(header(&m, "traceparent"), "00-ab");
    assert_string_equal(header(&m, "n"), "5");
    assert_string_equal(header(&m, "x"), "1.5");
    assert_string_equal(header(&m, "ok"), "true");
    assert_string_equal(header(&m, "empty"), "");
    assert_string_equal(header(&m, "caf\xC3\xA9"), "\xE2\x82\xAC");
    row.v[ROW_HEADERS] = "{}";
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(m.header_count, 0);
}

/* A row's header named as one the relay or a driver sets (the envelope in
 * any spelling, content type, CloudEvents') is dropped, any case; others
 * keep their order (issue 54). */
static void test_build_reserved_headers(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_HEADERS] = "{\"event_id\": \"11111111-1111-1111-1111-111111111111\", \"a\": \"1\","
                         " \"aggregate_id\": \"999\", \"Aggregate-Seq\": 7, \"X-Event-Id\": \"x\","
                         " \"content-type\": \"text/evil\", \"ce_id\": \"c\", \"CE-Source\": \"s\","
                         " \"cloudEvents_type\": \"t\", \"event_version\": \"9\", \"b\": \"2\","
                         " \"event_idx\": \"3\", \"cex\": \"4\"}";
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(m.header_count, 4);
    const char *want[][2] = {{"a", "1"}, {"b", "2"}, {"event_idx", "3"}, {"cex", "4"}};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(m.headers[i].key, want[i][0]);
        assert_string_equal(m.headers[i].value, want[i][1]);
    }
    assert_string_equal(m.event_id, "1");
    assert_string_equal(m.aggregate_id, "1");
    row.v[ROW_HEADERS] = "{\"event_id\": \"1111\"}";
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(m.header_count, 0);
}

/* Rows that cannot become a message, each with its reason. */
static void test_build_refusals(void **state)
{
    (void)state;
    static const struct {
        int column;
        const char *value, *want;
    } cases[] = {
        {ROW_EVENT_ID, NULL, "must not be NULL"},
        {ROW_AGGREGATE_ID, NULL, "must not be NULL"},
        {ROW_PAYLOAD, NULL, "payload is NULL"}, /* how the claim returns an oversize one */
        {ROW_PAYLOAD, "{\"a\":\"0123456789\"}",
         "payload of 18 bytes exceeds max_payload_bytes "
         "(16)"},
        {ROW_HEADERS, "[1, 2]", "headers must be a JSON object of strings"},
        {ROW_HEADERS, "{bad", "headers are not valid JSON: expected a string key at byte 1"},
        {ROW_HEADERS, "{\"a\": {\"b\": 1}}", "header \"a\" must be a string, number or boolean"},
        {ROW_HEADERS, "{\"a\": null}", "header \"a\" must be a string, number or boolean"},
        {ROW_EVENT_TYPE, "nothing.routes.me", "no route matches event_type \"nothing.routes.me\""},
        {ROW_AGGREGATE_ID, "", "names aggregate_id, which is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        claim_row row = claim_row_of("1", "Order", "1", "order.created");
        row.v[cases[i].column] = cases[i].value;
        obx_message m;
        size_t output;
        relay_config cfg = config();
        cfg_route catch_none = {.event_type = "order.*",
                                .aggregate_type = "Order",
                                .output = "b",
                                .output_index = 1,
                                .destination = "orders.${aggregate_id}",
                                .line = 10};
        if (cases[i].column == ROW_EVENT_TYPE) {
            cfg.routes = &catch_none;
            cfg.route_count = 1;
        }
        int rc = build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output);
        if (rc != -1 || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, \"%s\"; want -1 and \"%s\"", i, rc, err, cases[i].want);
    }
}

/* The limit is inclusive. */
static void test_build_payload_at_limit(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_PAYLOAD] = "{\"a\":\"01234567\"}"; /* 16 bytes */
    assert_int_equal(build(row, PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(m.payload_len, 16);
}

/* A NULL payload is a tombstone (no payload, no content type) only where the
 * route's output has tombstones = true; elsewhere it is refused. */
static void test_build_tombstone(void **state)
{
    (void)state;
    cfg_output outputs[2] = {{.name = "a", .tombstones = 1}, {.name = "b"}};
    cfg_route to_a = {.event_type = "*",
                      .aggregate_type = "*",
                      .output = "a",
                      .output_index = 0,
                      .destination = "t"};
    relay_config cfg = config();
    cfg.outputs = outputs;
    cfg.output_count = 2;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_PAYLOAD] = NULL;
    obx_message m;
    size_t output;
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output), -1);
    assert_non_null(strstr(err, "payload is NULL"));
    cfg.routes = &to_a;
    cfg.route_count = 1;
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output), 0);
    assert_int_equal(output, 0);
    assert_null(m.payload);
    assert_int_equal(m.payload_len, 0);
    assert_null(m.content_type);
}

/* A route that renders to nothing names where it is. */
static void test_build_empty_destination(void **state)
{
    (void)state;
    cfg_route blank = {.event_type = "*",
                       .aggregate_type = "*",
                       .output = "a",
                       .output_index = 0,
                       .destination = "",
                       .line = 12};
    relay_config cfg = config();
    cfg.routes = &blank;
    cfg.route_count = 1;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    obx_message m;
    size_t output;
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output), -1);
    assert_string_equal(err, "destination is empty (route at relay.conf:12)");
}

/* Header conditions: every named header present, its first value matching
 * the glob; a drop route answers MESSAGE_DROPPED with where it is. */
static void test_build_header_routes_and_drop(void **state)
{
    (void)state;
    cfg_header_match eu[] = {{"region", "eu-*"}, {"tier", "gold"}};
    cfg_header_match debug[] = {{"debug", "*"}};
    cfg_route rs[] = {
        {.event_type = "*",
         .aggregate_type = "*",
         .output = "b",
         .output_index = 1,
         .destination = "eu",
         .line = 20,
         .headers = eu,
         .header_count = 2},
        {.event_type = "*",
         .aggregate_type = "*",
         .output = "",
         .output_index = 2,
         .destination = "",
         .line = 21,
         .headers = debug,
         .header_count = 1,
         .drop = 1},
        {.event_type = "*",
         .aggregate_type = "*",
         .output = "a",
         .output_index = 0,
         .destination = "rest",
         .line = 22},
    };
    relay_config cfg = config();
    cfg.routes = rs;
    cfg.route_count = 3;
    cfg.output_count = 2;
    static const struct {
        const char *headers;
        int rc;
        size_t output;
    } cases[] = {
        {"{\"region\": \"eu-west\", \"tier\": \"gold\"}", 0, 1},
        {"{\"tier\": \"gold\", \"region\": \"eu-west\", \"region\": \"us\"}", 0, 1},
        {"{\"region\": \"us-east\", \"tier\": \"gold\"}", 0, 0}, /* glob misses */
        {"{\"region\": \"eu-west\"}", 0, 0},                     /* tier absent */
        {"{\"debug\": \"1\", \"tier\": \"gold\"}", MESSAGE_DROPPED, 99},
        {NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        claim_row row = claim_row_of("1", "Order", "1", "order.created");
        row.v[ROW_HEADERS] = cases[i].headers;
        obx_message m;
        size_t output = 99;
        int rc = build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output);
        if (rc != cases[i].rc || output != cases[i].output)
            fail_msg("case %zu: rc %d output %zu; want %d and %zu (%s)", i, rc, output, cases[i].rc,
                     cases[i].output, err);
    }
    assert_string_equal(err, "");
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_HEADERS] = "{\"debug\": \"yes\"}";
    obx_message m;
    size_t output;
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output),
                     MESSAGE_DROPPED);
    assert_string_equal(err, "dropped by the route at relay.conf:21");
}

/* A route shapes the row's headers for its output: drops by glob, then
 * renames, then sets (a template; replacing every header of that name);
 * routing saw the headers as the row had them. */
static void test_build_header_shaping(void **state)
{
    (void)state;
    cfg_header_match internal[] = {{"internal-a", "x"}};
    cfg_header_rule shape[] = {{HEADER_DROP, "internal-*", NULL},
                               {HEADER_RENAME, "traceparent", "trace-parent"},
                               {HEADER_RENAME, "keep", "kept"},
                               {HEADER_SET, "source", "orders-${aggregate_id}"},
                               {HEADER_SET, "dup", "one"}};
    cfg_route r = {.event_type = "*",
                   .aggregate_type = "*",
                   .output = "a",
                   .destination = "t",
                   .line = 30,
                   .headers = internal,
                   .header_count = 1,
                   .shape = shape,
                   .shape_count = 5};
    relay_config cfg = config();
    cfg.routes = &r;
    cfg.route_count = 1;
    claim_row row = claim_row_of("1", "Order", "42", "order.created");
    row.v[ROW_HEADERS] = "{\"internal-a\": \"x\", \"dup\": \"a\", \"traceparent\": \"00-ab\", "
                         "\"internal-b\": \"y\", \"keep\": \"k\", \"dup\": \"b\"}";
    obx_message m;
    size_t output;
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output), 0);
    static const char *const want[][2] = {
        {"trace-parent", "00-ab"}, {"kept", "k"}, {"source", "orders-42"}, {"dup", "one"}};
    assert_int_equal(m.header_count, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(m.headers[i].key, want[i][0]);
        assert_string_equal(m.headers[i].value, want[i][1]);
    }
    /* a template whose field is empty fails the message, naming the header */
    row = claim_row_of("1", "Order", "", "order.created");
    row.v[ROW_HEADERS] = "{\"internal-a\": \"x\"}";
    assert_int_equal(build_from(&cfg, claim_result(&row, 1), PAYLOAD_JSON, &m, &output), -1);
    assert_non_null(strstr(err, "set_headers source: "));
}

/* bytea arrives as \x hex text and leaves as the bytes it encodes. */
static void test_build_bytea_payload(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_PAYLOAD] = "\\x00ff41";
    assert_int_equal(build(row, PAYLOAD_BYTES, &m, &output), 0);
    assert_int_equal(m.payload_len, 3);
    assert_memory_equal(m.payload, "\x00\xff\x41", 3);
    assert_string_equal(m.content_type, "application/octet-stream");
    row.v[ROW_PAYLOAD] = "\\x";
    assert_int_equal(build(row, PAYLOAD_BYTES, &m, &output), 0);
    assert_int_equal(m.payload_len, 0);
}

/* A text payload column is checked to hold JSON. */
static void test_build_text_payload(void **state)
{
    (void)state;
    obx_message m;
    size_t output;
    claim_row row = claim_row_of("1", "Order", "1", "order.created");
    row.v[ROW_PAYLOAD] = "\"a string\"";
    assert_int_equal(build(row, PAYLOAD_TEXT, &m, &output), 0);
    assert_string_equal(m.content_type, "application/json");
    row.v[ROW_PAYLOAD] = "{not json";
    assert_int_equal(build(row, PAYLOAD_TEXT, &m, &output), -1);
    assert_non_null(strstr(err, "payload is not valid JSON"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_fields),
        cmocka_unit_test(test_render_literal_text),
        cmocka_unit_test(test_render_constant_is_not_copied),
        cmocka_unit_test(test_render_long_value),
        cmocka_unit_test(test_render_refusals),
        cmocka_unit_test(test_build_fields),
        cmocka_unit_test(test_build_routes),
        cmocka_unit_test(test_build_destination_override),
        cmocka_unit_test(test_build_headers),
        cmocka_unit_test(test_build_reserved_headers),
        cmocka_unit_test(test_build_refusals),
        cmocka_unit_test(test_build_payload_at_limit),
        cmocka_unit_test(test_build_empty_destination),
        cmocka_unit_test(test_build_tombstone),
        cmocka_unit_test(test_build_header_routes_and_drop),
        cmocka_unit_test(test_build_header_shaping),
        cmocka_unit_test(test_build_bytea_payload),
        cmocka_unit_test(test_build_text_payload),
    };
    return cmocka_run_group_tests(tests, NULL, free_scratch);
}
