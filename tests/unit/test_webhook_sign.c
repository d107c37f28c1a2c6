/* drivers/webhook/wh_sign.c against the example the Standard Webhooks
 * specification publishes, and its refusal of secrets that are not base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "wh_sign.h"

static void test_published_example(void **state)
{
    (void)state;
    unsigned char key[WH_STD_KEY_MAX];
    size_t key_len = 0;
    char sig[WH_STD_SIG_SIZE];
    const char *body = "{\"test\": 2432232314}";
    assert_int_equal(
        wh_std_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key, sizeof key, &key_len), 0);
    assert_int_equal(key_len, 24);
    assert_int_equal(wh_std_sign(key, key_len, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                 strlen(body), sig, sizeof sig),
                     0);
    assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* the prefix is optional; a changed body changes the signature */
    assert_int_equal(wh_std_key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key, sizeof key, &key_len), 0);
    assert_int_equal(wh_std_sign(key, key_len, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, "{}", 2,
                                 sig, sizeof sig),
                     0);
    assert_string_not_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

static void test_bad_secrets(void **state)
{
    (void)state;
    unsigned char key[WH_STD_KEY_MAX];
    size_t key_len;
    assert_int_equal(wh_std_key("whsec_", key, sizeof key, &key_len), -1);
    assert_int_equal(wh_std_key("whsec_not base64!", key, sizeof key, &key_len), -1);
    assert_int_equal(wh_std_key("whsec_abc", key, sizeof key, &key_len),
                     -1); /* not a multiple of 4 */
    assert_int_equal(wh_std_key("whsec_QQ==", key, sizeof key, &key_len), 0);
    assert_int_equal(key_len, 1); /* padding is not key */
    assert_int_equal(key[0], 'A');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_example),
        cmocka_unit_test(test_bad_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
