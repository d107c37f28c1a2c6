/*
 * A JSON scanner (RFC 8259) for the payload and headers columns. PostgreSQL
 * has already parsed json/jsonb, so this mostly re-reads its output: it
 * checks the grammar and UTF-8, and hands header numbers on byte for byte as
 * PostgreSQL printed them (a double or a 64-bit integer would round 0.1 or
 * refuse 2^70).
 */
#include "event/json_scan.h"

#include <stdio.h>
#include <string.h>

#define JSON_MAX_DEPTH 1000

typedef struct jscan {
    const char *start, *p, *end;
    char *err;
    size_t err_size;
} jscan;

static int js_fail(jscan *s, const char *what)
{
    snprintf(s->err, s->err_size, "%s at byte %zu", what, (size_t)(s->p - s->start));
    return -1;
}

static void js_space(jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* The length of the UTF-8 sequence at p (shortest form, no surrogates), or 0. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    size_t n = p[0] < 0x80                    ? 1
               : p[0] >= 0xC2 && p[0] <= 0xDF ? 2
               : (p[0] & 0xF0) == 0xE0        ? 3
               : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4
                                              : 0;
    if (!n || (size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0) ||
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))
        return 0; /* overlong, a surrogate, or above U+10FFFF */
    return n;
}

static int js_hex4(jscan *s, unsigned *out)
{
    unsigned v = 0;
    if (s->end - s->p < 4)
        return js_fail(s, "truncated \\u escape");
    for (int i = 0; i < 4; i++, s->p++) {
        char c = *s->p;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return js_fail(s, "bad \\u escape");
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

static char *utf8_put(char *d, unsigned cp)
{
    if (cp < 0x80) {
        *d++ = (char)cp;
    } else if (cp < 0x800) {
        *d++ = (char)(0xC0 | cp >> 6);
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *d++ = (char)(0xE0 | cp >> 12);
        *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *d++ = (char)(0xF0 | cp >> 18);
        *d++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    }
    return d;
}

/* A string at s->p (on its quote). With a, *out receives the decoded text
 * (never longer than its escaped form), NUL-terminated, and \u0000 is
 * refused because message texts are C strings; without, it is only checked. */
static int js_string(jscan *s, arena *a, const char **out)
{
    const char *q = ++s->p;
    while (q < s->end && *q != '"')
        q += *q == '\\' && q + 1 < s->end ? 2 : 1;
    if (q >= s->end)
        return js_fail(s, "unterminated string");
    char *d = a ? arena_alloc(a, (size_t)(q - s->p) + 1) : NULL, *o = d;
    while (*s->p != '"') {
        unsigned char c = (unsigned char)*s->p;
        if (c < 0x20)
            return js_fail(s, "control character in a string");
        if (c != '\\') {
            size_t n = utf8_sequence((const unsigned char *)s->p, (const unsigned char *)q);
            if (!n)
                return js_fail(s, "invalid UTF-8 in a string");
            if (d)
                memcpy(d, s->p, n), d += n;
            s->p += n;
            continue;
        }
        char e = *++s->p;
        const char *plain = strchr("\"\\/bfnrt", e);
        if (e && plain) {
            if (d)
                *d++ = "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
            s->p++;
            continue;
        }
        unsigned cp, lo;
        if (e != 'u')
            return js_fail(s, "bad escape in a string");
        s->p++;
        if (js_hex4(s, &cp) < 0)
            return -1;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return js_fail(s, "lone low surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
                return js_fail(s, "lone high surrogate in a \\u escape");
            s->p += 2;
            if (js_hex4(s, &lo) < 0)
                return -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return js_fail(s, "bad surrogate pair in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0 && a)
            return js_fail(s, "\\u0000 (NUL) in a string");
        if (d)
            d = utf8_put(d, cp);
    }
    s->p++;
    if (d) {
        *d = '\0';
        *out = o;
    }
    return 0;
}

/* A number at s->p: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int js_number(jscan *s)
{
#define DIGITS(s) ((s)->p < (s)->end && *(s)->p >= '0' && *(s)->p <= '9')
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (!DIGITS(s))
        return js_fail(s, "expected a JSON value");
    if (*s->p++ != '0')
        while (DIGITS(s))
            s->p++;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!DIGITS(s))
            return js_fail(s, "expected a digit after the decimal point");
        while (DIGITS(s))
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!DIGITS(s))
            return js_fail(s, "expected a digit in the exponent");
        while (DIGITS(s))
            s->p++;
    }
    return 0;
#undef DIGITS
}

static int js_literal(jscan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return js_fail(s, "expected a JSON value");
    s->p += n;
    return 0;
}

static int js_value(jscan *s, int depth);

/* An object or array at s->p, after its opening bracket was checked. */
static int js_container(jscan *s, int depth)
{
    char close = *s->p == '{' ? '}' : ']';
    if (depth >= JSON_MAX_DEPTH)
        return js_fail(s, "nested too deeply");
    s->p++;
    js_space(s);
    if (s->p < s->end && *s->p == close)
        return s->p++, 0;
    for (;;) {
        if (close == '}') {
            js_space(s);
            if (s->p >= s->end || *s->p != '"')
                return js_fail(s, "expected a string key");
            if (js_string(s, NULL, NULL) < 0)
                return -1;
            js_space(s);
            if (s->p >= s->end || *s->p != ':')
                return js_fail(s, "expected ':'");
            s->p++;
        }
        if (js_value(s, depth + 1) < 0)
            return -1;
        js_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close)
            return s->p++, 0;
        return js_fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int js_value(jscan *s, int depth)
{
    js_space(s);
    if (s->p >= s->end)
        return js_fail(s, "unexpected end");
    switch (*s->p) {
    case '{':
    case '[': return js_container(s, depth);
    case '"': return js_string(s, NULL, NULL);
    case 't': return js_literal(s, "true");
    case 'f': return js_literal(s, "false");
    case 'n': return js_literal(s, "null");
    default: return js_number(s);
    }
}

/* Checks that text[0..len) is one JSON document. */
int json_check(const char *text, size_t len, char *err, size_t err_size)
{
    jscan s = {text, text, text + len, err, err_size};
    if (js_value(&s, 0) < 0)
        return -1;
    js_space(&s);
    return s.p == s.end ? 0 : js_fail(&s, "trailing characters");
}

/* One header value: a string (decoded), a number (as written) or a boolean.
 * Returns -1 on a syntax error (in s->err), -2 for another type of value. */
static int header_value(jscan *s, arena *a, const char **out)
{
    const char *from = s->p;
    char c = s->p < s->end ? *s->p : '\0';
    int rc;
    if (c == '"')
        return js_string(s, a, out);
    if (c == 't')
        rc = js_literal(s, "true");
    else if (c == 'f')
        rc = js_literal(s, "false");
    else if (c == '-' || (c >= '0' && c <= '9'))
        rc = js_number(s);
    else
        return c == '{' || c == '[' || c == 'n' ? -2 : js_fail(s, "expected a JSON value");
    if (rc == 0)
        *out = arena_strndup(a, from, (size_t)(s->p - from));
    return rc;
}

/* The headers column: a JSON object; scalar values are passed as text, in order. */
int json_read_headers(const char *text, arena *a, obx_message *msg, char *err, size_t err_size)
{
    char why[200];
    jscan s = {text, text, text + strlen(text), why, sizeof why};
    size_t count = 0, cap = 8;
    obx_header *h = arena_alloc(a, cap * sizeof *h);
    js_space(&s);
    if (s.p >= s.end || *s.p != '{') {
        snprintf(err, err_size, "headers must be a JSON object of strings, numbers or booleans");
        return -1;
    }
    s.p++;
    js_space(&s);
    int rc = 0, more = s.p < s.end && *s.p != '}';
    while (rc == 0 && more) {
        if (count == cap) { /* the old array stays in the arena until the batch ends */
            obx_header *bigger = arena_alloc(a, 2 * cap * sizeof *h);
            memcpy(bigger, h, cap * sizeof *h);
            h = bigger, cap *= 2;
        }
        js_space(&s);
        if (s.p >= s.end || *s.p != '"')
            rc = js_fail(&s, "expected a string key");
        else if ((rc = js_string(&s, a, &h[count].key)) == 0) {
            js_space(&s);
            if (s.p >= s.end || *s.p != ':')
                rc = js_fail(&s, "expected ':'");
        }
        if (rc == 0) {
            s.p++;
            js_space(&s);
            rc = header_value(&s, a, &h[count].value);
            if (rc == -2) {
                snprintf(err, err_size, "header \"%s\" must be a string, number or boolean",
                         h[count].key);
                return -1;
            }
        }
        if (rc == 0) {
            count++;
            js_space(&s);
            more = s.p < s.end && *s.p == ',';
            s.p += more;
        }
    }
    if (rc == 0) {
        if (s.p >= s.end || *s.p != '}')
            rc = js_fail(&s, "expected ',' or '}'");
        else
            s.p++;
        js_space(&s);
        if (rc == 0 && s.p != s.end)
            rc = js_fail(&s, "trailing characters");
    }
    if (rc < 0) {
        snprintf(err, err_size, "headers are not valid JSON: %s", why);
        return -1;
    }
    msg->headers = count ? h : NULL;
    msg->header_count = count;
    return 0;
}
