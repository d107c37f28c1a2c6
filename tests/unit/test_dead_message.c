/* What the dead-letter output gets for a dead row (forward/dead_message.c):
 * fields, payload, the row's headers when they read and the three that say
 * why it died, the destination template with "unknown" for an empty field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "forward/dead_message.h"

/* A reader's result of one row (NULL: SQL NULL). */
static PGresult *dead_result(const char *const v[DEAD_COLUMNS])
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc attrs[DEAD_COLUMNS];
    memset(attrs, 0, sizeof attrs);
    for (int c = 0; c < DEAD_COLUMNS; c++) {
        attrs[c].name = (char *)"c";
        attrs[c].typid = 25;
        attrs[c].typlen = -1;
        attrs[c].atttypmod = -1;
    }
    assert_true(PQsetResultAttrs(res, DEAD_COLUMNS, attrs));
    for (int c = 0; c < DEAD_COLUMNS; c++)
        assert_true(PQsetvalue(res, 0, c, (char *)v[c], v[c] ? (int)strlen(v[c]) : -1));
    return res;
}

static relay_config config(const char *destination)
{
    relay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dead_letter_output = "dl";
    cfg.dead_letter_destination = (char *)destination;
    return cfg;
}

static const char *header(const obx_message *m, const char *key)
{
    for (size_t i = 0; i < m->header_count; i++)
        if (!strcmp(m->headers[i].key, key))
            return m->headers[i].value;
    return NULL;
}

static void test_whole_row(void **state)
{
    (void)state;
    const char *v[DEAD_COLUMNS] = {
        [DEAD_EVENT_ID] = "e1",
        [DEAD_EVENT_TYPE] = "order.paid",
        [DEAD_AGGREGATE_TYPE] = "Order",
        [DEAD_AGGREGATE_ID] = "42",
        [DEAD_PAYLOAD] = "{\"n\": 1}",
        [DEAD_HEADERS] = "{\"tenant\": \"acme\"}",
        [DEAD_AT_US] = "1700000000123456",
        [DEAD_ATTEMPTS] = "3",
        [DEAD_ERROR] = "gave up after 3 attempts: nack",
        [DEAD_CREATED_US] = "1700000000000001",
    };
    relay_config cfg = config("dead.${aggregate_type}.${event_type}");
    PGresult *res = dead_result(v);
    arena a = {0};
    obx_message m;
    size_t out;
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_JSON, res, 0, &a, &m, &out), 0);
    assert_string_equal(m.event_id, "e1");
    assert_string_equal(m.destination, "dead.Order.order.paid");
    assert_int_equal(m.payload_len, 8);
    assert_memory_equal(m.payload, "{\"n\": 1}", 8);
    assert_string_equal(m.content_type, "application/json");
    assert_true(m.created_at_us == 1700000000000001LL);
    assert_int_equal(m.header_count, 4);
    assert_string_equal(m.headers[0].key, "tenant");
    assert_string_equal(header(&m, "dead_letter_error"), "gave up after 3 attempts: nack");
    assert_string_equal(header(&m, "dead_letter_attempts"), "3");
    assert_string_equal(header(&m, "dead_letter_at"), "2023-11-14T22:13:20.123456Z");
    PQclear(res);
    arena_free(&a);
}

/* What could not become a message still goes: NULL fields, headers that
 * do not read (left out), a bytea payload decoded, "unknown" in the
 * destination for an empty field. */
static void test_bad_row(void **state)
{
    (void)state;
    const char *v[DEAD_COLUMNS] = {
        [DEAD_EVENT_ID] = "e2",
        [DEAD_EVENT_TYPE] = "misc",
        [DEAD_AGGREGATE_TYPE] = NULL,
        [DEAD_AGGREGATE_ID] = "",
        [DEAD_PAYLOAD] = "\\x00ff",
        [DEAD_HEADERS] = "{\"nested\": {\"a\": 1}}",
        [DEAD_AT_US] = "0",
        [DEAD_ATTEMPTS] = "1",
        [DEAD_ERROR] = "headers: not a scalar",
        [DEAD_CREATED_US] = "0",
    };
    relay_config cfg = config("dead/${aggregate_type}/${aggregate_id}");
    PGresult *res = dead_result(v);
    arena a = {0};
    obx_message m;
    size_t out;
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_BYTES, res, 0, &a, &m, &out), 0);
    assert_string_equal(m.aggregate_type, "");
    assert_string_equal(m.destination, "dead/unknown/unknown");
    assert_int_equal(m.payload_len, 2);
    assert_memory_equal(m.payload, "\x00\xff", 2);
    assert_string_equal(m.content_type, "application/octet-stream");
    assert_int_equal(m.header_count, 3);
    assert_string_equal(header(&m, "dead_letter_error"), "headers: not a scalar");
    assert_string_equal(header(&m, "dead_letter_at"), "1970-01-01T00:00:00.000000Z");
    PQclear(res);
    arena_free(&a);

    v[DEAD_PAYLOAD] = "{not json"; /* a text column's event that died for it */
    res = dead_result(v);
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_TEXT, res, 0, &a, &m, &out), 0);
    assert_string_equal(m.content_type, "application/octet-stream");
    PQclear(res);
    arena_free(&a);

    v[DEAD_PAYLOAD] = NULL; /* over max_payload_bytes, or NULL: sent empty */
    res = dead_result(v);
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_JSON, res, 0, &a, &m, &out), 0);
    assert_int_equal(m.payload_len, 0);
    PQclear(res);
    arena_free(&a);
}

/* A route's own dead_letter takes its events; the global one the rest; with
 * no global one, an event whose route has none goes nowhere. */
static void test_route_dead_letter(void **state)
{
    (void)state;
    const char *v[DEAD_COLUMNS] = {
        [DEAD_EVENT_ID] = "e3",
        [DEAD_EVENT_TYPE] = "order.paid",
        [DEAD_AGGREGATE_TYPE] = "Order",
        [DEAD_AGGREGATE_ID] = "7",
        [DEAD_AT_US] = "0",
        [DEAD_ATTEMPTS] = "1",
        [DEAD_ERROR] = "nack",
        [DEAD_CREATED_US] = "0",
    };
    cfg_route routes[] = {
        {.event_type = "order.*",
         .aggregate_type = "*",
         .dead_letter_output = "orders-dl",
         .dead_letter_output_index = 2,
         .dead_letter_destination = "orders.dead.${aggregate_id}"},
        {.event_type = "*", .aggregate_type = "*"},
    };
    relay_config cfg = config("dead.${event_type}");
    cfg.dead_letter_output_index = 1;
    cfg.routes = routes;
    cfg.route_count = 2;
    PGresult *res = dead_result(v);
    arena a = {0};
    obx_message m;
    size_t out = 99;
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_JSON, res, 0, &a, &m, &out), 0);
    assert_int_equal(out, 2);
    assert_string_equal(m.destination, "orders.dead.7");
    PQclear(res);
    v[DEAD_EVENT_TYPE] = "user.made";
    res = dead_result(v);
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_JSON, res, 0, &a, &m, &out), 0);
    assert_int_equal(out, 1);
    assert_string_equal(m.destination, "dead.user.made");
    cfg.dead_letter_output = NULL;
    assert_int_equal(dead_message_build(&cfg, PAYLOAD_JSON, res, 0, &a, &m, &out), -1);
    PQclear(res);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_row),
        cmocka_unit_test(test_bad_row),
        cmocka_unit_test(test_route_dead_letter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
