/* Standard Webhooks signing (wh_sign.c), apart so a unit test can check it
 * against the spec's published example. */
#ifndef WH_SIGN_H
#define WH_SIGN_H

#include <stddef.h>

#define WH_STD_KEY_MAX 256 /* bytes of a decoded signing key */
#define WH_STD_SIG_SIZE 48 /* "v1," + 44 base64 characters + NUL */

/* Decodes a "whsec_<base64>" secret (the prefix may be left out) into key;
 * -1 when it is not base64 or too long. */
int wh_std_key(const char *secret, unsigned char *key, size_t key_size, size_t *key_len);

/* Writes "v1,<base64 HMAC-SHA256 of id.timestamp.body>" into out; -1 on failure. */
int wh_std_sign(const unsigned char *key, size_t key_len, const char *id, long long timestamp,
                const void *body, size_t body_len, char *out, size_t out_size);

#endif
