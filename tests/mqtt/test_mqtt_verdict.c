/*
 * The MQTT driver's verdict on a broker's answer, as a table: every PUBACK /
 * PUBREC failure code (0x80..0xFF) and a publish never acknowledged. Mosquitto
 * 2.0 cannot be made to answer 0x97 Quota exceeded or 0x89 Server busy, so
 * this is where those rows are proved; mqtt_driver's freeze and hang
 * scenarios prove the timeout row against a real broker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "mqc_verdict.h"

/* pushback: the broker's state, counts no attempt */
static void test_pushback_is_unavailable(void **state)
{
    (void)state;
    assert_int_equal(mqc_reason_status(0x97), OBX_UNAVAILABLE); /* Quota exceeded */
    assert_int_equal(mqc_reason_status(0x89), OBX_UNAVAILABLE); /* Server busy */
    assert_int_equal(mqc_timeout_status(), OBX_UNAVAILABLE);
}

/* the event's, told by the broker: dead at once */
static void test_event_refused_is_permanent(void **state)
{
    (void)state;
    assert_int_equal(mqc_reason_status(0x87), OBX_PERMANENT); /* Not authorized */
    assert_int_equal(mqc_reason_status(0x90), OBX_PERMANENT); /* Topic name invalid */
    assert_int_equal(mqc_reason_status(0x95), OBX_PERMANENT); /* Packet too large */
    assert_int_equal(mqc_reason_status(0x99), OBX_PERMANENT); /* Payload format invalid */
}

/* 0x80 Unspecified is the event's, retried: a poison event must end dead */
static void test_unspecified_is_retriable(void **state)
{
    (void)state;
    assert_int_equal(mqc_reason_status(0x80), OBX_RETRIABLE);
    assert_int_equal(mqc_reason_status(0x83), OBX_RETRIABLE); /* Implementation specific */
    assert_int_equal(mqc_reason_status(0x91), OBX_RETRIABLE); /* Packet identifier in use */
}

/* no failure code falls outside the three, and only the six above are not RETRIABLE */
static void test_every_code(void **state)
{
    (void)state;
    int unavailable = 0, permanent = 0;
    for (int rc = 0x80; rc <= 0xff; rc++) {
        obx_status st = mqc_reason_status(rc);
        assert_true(st == OBX_RETRIABLE || st == OBX_PERMANENT || st == OBX_UNAVAILABLE);
        unavailable += st == OBX_UNAVAILABLE;
        permanent += st == OBX_PERMANENT;
    }
    assert_int_equal(unavailable, 2);
    assert_int_equal(permanent, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pushback_is_unavailable),
        cmocka_unit_test(test_event_refused_is_permanent),
        cmocka_unit_test(test_unspecified_is_retriable),
        cmocka_unit_test(test_every_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
