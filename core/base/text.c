#include "base/text.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. Refuses
 * overlong forms, surrogates and code points past U+10FFFF, as PostgreSQL
 * does. */
static size_t sequence_length(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c >= 0x01 && c < 0x80)
        return 1;
    size_t len;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
        len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

int text_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = sequence_length(p + i, n - i);
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

char *text_copy(char *dst, size_t cap, const char *src)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    if (cap == 0)
        return dst;
    size_t out = 0;
    const unsigned char *p = (const unsigned char *)(src ? src : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        size_t len = sequence_length(p + i, n - i);
        const char *piece = len ? (const char *)p + i : replacement;
        size_t piece_len = len ? len : 3;
        if (out + piece_len >= cap)
            break; /* never half a character */
        memcpy(dst + out, piece, piece_len);
        out += piece_len;
        i += len ? len : 1;
    }
    dst[out] = '\0';
    return dst;
}

void text_print_clean(FILE *out, const char *s, size_t max)
{
    size_t n = 0;
    for (; *s && n < max; s++, n++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            fprintf(out, "\\x%02x", (unsigned char)*s);
        else
            fputc(*s, out);
    if (*s)
        fputs("...", out);
}

char *text_fill(char *text, const char *key, const char *value)
{
    size_t klen = strlen(key), vlen = strlen(value), n = 0;
    for (const char *p = text; (p = strstr(p, key)); p += klen)
        n++;
    char *out = malloc(strlen(text) + n * vlen + 1), *o = out;
    for (const char *p = text, *hit;; p = hit + klen) {
        hit = strstr(p, key);
        size_t len = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(o, p, len);
        o += len;
        if (!hit)
            break;
        memcpy(o, value, vlen);
        o += vlen;
    }
    *o = '\0';
    free(text);
    return out;
}
