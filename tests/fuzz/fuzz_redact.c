/*
 * Fuzz target: conninfo_redact, which makes libpq's texts (errors, notices,
 * which may quote the conninfo) fit to print. The input is a text, put after
 * a password planted as "password=SECRET" and after a URI's "user:SECRET@":
 * whatever follows, the secret must not survive; the result is one line
 * within the buffer. (An input holding the secret's text itself proves
 * nothing and is skipped.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"

#define SECRET "Zq7s3cr3tZq7"

static void check(const char *prefix, const uint8_t *data, size_t size, const char *suffix)
{
    size_t cap = size + strlen(prefix) + strlen(suffix) + 64;
    char *text = malloc(cap);
    size_t n = strlen(prefix);
    memcpy(text, prefix, n);
    for (size_t i = 0; i < size; i++) /* the planted secret must stay a whole token */
        text[n++] = data[i] == '\0' ? ' ' : (char)data[i];
    strcpy(text + n, suffix);
    conninfo_redact(text, cap);
    if (strlen(text) >= cap || strchr(text, '\n') || strstr(text, SECRET))
        abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memmem(data, size, SECRET, strlen(SECRET)))
        return 0;
    check("connection to \"host=db password=" SECRET " user=u\" failed: ", data, size, "");
    check("postgresql://app:" SECRET "@db:5432/app ", data, size, "");
    check("", data, size, "");
    return 0;
}
