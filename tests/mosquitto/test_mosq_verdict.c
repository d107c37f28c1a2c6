/* The verdict table the mosquitto driver uses (the mqtt driver's too): PUBACK
 * and CONNACK reason codes (drivers/mqtt/README.md, "Whose fault an answer is"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mqc_verdict.h"

static void puback_codes(void **state)
{
    (void)state;
    const int permanent[] = {0x87, 0x90, 0x95, 0x99};
    const int unavailable[] = {0x97, 0x89};
    const int retriable[] = {0x80, 0x83, 0x91, 0x8F};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(mqc_reason_status(permanent[i]), OBX_PERMANENT);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(mqc_reason_status(unavailable[i]), OBX_UNAVAILABLE);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(mqc_reason_status(retriable[i]), OBX_RETRIABLE);
}

static void connack_codes(void **state)
{
    (void)state;
    assert_true(mqc_connack_fatal(0x85));
    assert_true(mqc_connack_fatal(0x86));
    assert_true(mqc_connack_fatal(0x87));
    assert_true(mqc_connack_fatal(0x8A));
    assert_false(mqc_connack_fatal(0x88)); /* server unavailable: retried */
    assert_false(mqc_connack_fatal(0x89)); /* server busy */
    assert_false(mqc_connack_fatal(-1));   /* no CONNACK: connection refused */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(puback_codes),
        cmocka_unit_test(connack_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
