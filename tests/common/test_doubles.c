/*
 * The shared test doubles checked on their own: the delivery checker's
 * counts (a consumer trusts them to fail a test) and the message factory's
 * shape (the consumers' order checks rely on n growing within an aggregate).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "delivery.h"
#include "messages.h"

static delivery_verdict add(delivery *d, const char *id, const char *agg, int64_t seq)
{
    return delivery_add(d, id, strlen(id), agg, strlen(agg), seq);
}

static void test_duplicates_and_lost_are_counted(void **state)
{
    (void)state;
    delivery *d = delivery_new("test");
    assert_int_equal(add(d, "e1", "a", 1), DELIVERY_FIRST);
    assert_int_equal(add(d, "e2", "a", 2), DELIVERY_FIRST);
    assert_int_equal(add(d, "e1", "a", 1), DELIVERY_DUPLICATE);
    assert_int_equal(delivery_received(d), 3);
    assert_int_equal(delivery_unique(d), 2);
    assert_int_equal(delivery_duplicates(d), 1);
    assert_int_equal(delivery_order_breaks(d), 0);
    assert_int_equal(delivery_lost(d, 5), 3);
    assert_int_equal(delivery_lost(d, 2), 0);
    delivery_free(d);
}

static void test_order_breaks_are_per_aggregate(void **state)
{
    (void)state;
    delivery *d = delivery_new("test");
    assert_int_equal(add(d, "e5", "a", 5), DELIVERY_FIRST);
    assert_int_equal(add(d, "e1", "b", 1), DELIVERY_FIRST); /* another aggregate: fine */
    assert_int_equal(add(d, "e3", "a", 3), DELIVERY_OUT_OF_ORDER);
    assert_int_equal(add(d, "e4", "a", 5), DELIVERY_OUT_OF_ORDER); /* not above the highest */
    assert_int_equal(add(d, "e6", "a", 6), DELIVERY_FIRST);
    assert_int_equal(add(d, "e6", "a", 6), DELIVERY_DUPLICATE); /* a duplicate is no break */
    assert_int_equal(add(d, "e7", "a", -1), DELIVERY_FIRST);    /* no sequence: no check */
    assert_int_equal(delivery_order_breaks(d), 2);
    assert_int_equal(delivery_aggregates(d), 2);
    delivery_free(d);
}

static void test_ids_are_byte_strings(void **state)
{
    (void)state;
    delivery *d = delivery_new("test");
    /* the same bytes with a different length are different ids */
    assert_int_equal(delivery_add(d, "abc", 2, "a", 1, -1), DELIVERY_FIRST);
    assert_int_equal(delivery_add(d, "abd", 3, "a", 1, -1), DELIVERY_FIRST);
    assert_int_equal(delivery_add(d, "abx", 2, "a", 1, -1), DELIVERY_DUPLICATE);
    delivery_free(d);
}

static void test_many_events_keep_their_counts(void **state)
{
    (void)state;
    delivery *d = delivery_new("test");
    char id[32], agg[16];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 5000; i++) {
            snprintf(id, sizeof id, "id-%d", i);
            snprintf(agg, sizeof agg, "agg-%d", i % 7);
            add(d, id, agg, i);
        }
    assert_int_equal(delivery_unique(d), 5000);
    assert_int_equal(delivery_duplicates(d), 5000);
    assert_int_equal(delivery_order_breaks(d), 0);
    assert_int_equal(delivery_aggregates(d), 7);
    delivery_free(d);
}

static void test_messages_have_the_documented_shape(void **state)
{
    (void)state;
    static const obx_header fixed[] = {{"tenant", "t1"}};
    msg_shape shape = {.run = 0xabcdef01,
                       .salt = 7,
                       .aggregates = 3,
                       .destination = "topic",
                       .headers = fixed,
                       .header_count = 1,
                       .seq_header = "seq",
                       .seq_prefix = "s-",
                       .created_at_us = 42};
    msg_set s;
    msg_set_make(&s, 20, &shape);
    const obx_message *m = &s.m[13];
    assert_int_equal(m->token, 13);
    assert_string_equal(m->event_id, "abcdef01-0007-4000-8000-00000000000d");
    assert_string_equal(m->aggregate_id, "agg-1");
    assert_string_equal(m->destination, "topic");
    assert_int_equal(m->payload_len, strlen("{\"n\": 13}"));
    assert_memory_equal(m->payload, "{\"n\": 13}", m->payload_len);
    assert_int_equal(m->header_count, 2);
    assert_string_equal(m->headers[0].key, "tenant");
    assert_string_equal(m->headers[1].key, "seq");
    assert_string_equal(m->headers[1].value, "s-13");
    assert_int_equal(m->created_at_us, 42);
    assert_int_equal(m->attempt, 1);
    for (size_t i = 1; i < s.n; i++) /* every event id differs */
        assert_string_not_equal(s.m[i].event_id, s.m[i - 1].event_id);
    msg_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duplicates_and_lost_are_counted),
        cmocka_unit_test(test_order_breaks_are_per_aggregate),
        cmocka_unit_test(test_ids_are_byte_strings),
        cmocka_unit_test(test_many_events_keep_their_counts),
        cmocka_unit_test(test_messages_have_the_documented_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
