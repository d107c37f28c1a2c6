/*
 * Standard Webhooks signatures: the key is the base64 after "whsec_"; each
 * request is signed over "<webhook-id>.<webhook-timestamp>.<body>" with
 * HMAC-SHA256 and the result sent as "v1,<base64>". A receiver that knows
 * the secret checks it with any Standard Webhooks library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wh_sign.h"

int wh_std_key(const char *secret, unsigned char *key, size_t key_size, size_t *key_len)
{
    if (strncmp(secret, "whsec_", 6) == 0) /* the prefix is optional, as receivers treat it */
        secret += 6;
    size_t n = strlen(secret);
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > key_size ||
        secret[strspn(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")])
        return -1;
    int len = EVP_DecodeBlock(key, (const unsigned char *)secret, (int)n);
    if (len < 0)
        return -1;
    /* EVP_DecodeBlock counts the padding's bytes as zeros: drop them */
    for (size_t i = n; i > 0 && secret[i - 1] == '='; i--)
        len--;
    *key_len = (size_t)len;
    return len > 0 ? 0 : -1;
}

int wh_std_sign(const unsigned char *key, size_t key_len, const char *id, long long timestamp,
                const void *body, size_t body_len, char *out, size_t out_size)
{
    char head[160];
    int n = snprintf(head, sizeof head, "%s.%lld.", id, timestamp);
    if (n < 0 || (size_t)n >= sizeof head || out_size < WH_STD_SIG_SIZE)
        return -1;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    unsigned char *signed_text = malloc((size_t)n + body_len + 1); /* one-shot HMAC */
    int ok = signed_text != NULL;
    if (ok) {
        memcpy(signed_text, head, (size_t)n);
        memcpy(signed_text + n, body_len ? body : "", body_len);
        ok = HMAC(EVP_sha256(), key, (int)key_len, signed_text, (size_t)n + body_len, md,
                  &md_len) != NULL;
    }
    free(signed_text);
    if (!ok || md_len != 32)
        return -1;
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, md, (int)md_len);
    return 0;
}
