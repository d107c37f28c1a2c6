#include "base/conninfo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* libpq's messages span lines and indent with tabs: fold to one line. */
static void one_line(char *s)
{
    char *out = s;
    for (const char *p = s; *p; p++) {
        char c = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
        if (c == ' ' && (out == s || out[-1] == ' '))
            continue;
        *out++ = c;
    }
    while (out > s && out[-1] == ' ')
        out--;
    *out = '\0';
}

#define MASK "***"

/* Copies s to out with each "password = VALUE" (conninfo or URI query
 * parameter) masked: VALUE ends at an unquoted space or '&'. */
static void mask_password_keys(char *s)
{
    size_t len = strlen(s);
    char *out = malloc(len + 1 + sizeof MASK * (len / 8 + 1)), *o = out;
    for (const char *p = s; *p;) {
        if (strncasecmp(p, "password", 8) != 0) {
            *o++ = *p++;
            continue;
        }
        const char *q = p + 8;
        while (*q == ' ')
            q++;
        if (*q != '=') {
            *o++ = *p++;
            continue;
        }
        memcpy(o, p, q + 1 - p);
        o += q + 1 - p;
        for (q++; *q == ' '; q++)
            ;
        if (*q == '\'') { /* a quoted value, with \' and \\ escapes */
            for (q++; *q && *q != '\''; q++)
                if (*q == '\\' && q[1])
                    q++;
            if (*q)
                q++;
        } else {
            while (*q && !isspace((unsigned char)*q) && *q != '&')
                q++;
        }
        memcpy(o, MASK, strlen(MASK));
        o += strlen(MASK);
        p = q;
    }
    *o = '\0';
    strcpy(s, out); /* the caller's buffer has room for the masks */
    free(out);
}

/* Masks the password of "scheme://user:password@host" in place. */
static void mask_uri_userinfo(char *s)
{
    for (char *p = strstr(s, "://"); p; p = strstr(p, "://")) {
        char *start = p + 3, *end = start + strcspn(start, "/?#\" \t\n");
        char *at = NULL;
        for (char *q = start; q < end; q++)
            if (*q == '@')
                at = q;
        char *colon = at ? memchr(start, ':', at - start) : NULL;
        if (colon) {
            memmove(colon + 1 + strlen(MASK), at, strlen(at) + 1);
            memcpy(colon + 1, MASK, strlen(MASK));
            p = colon + 1 + strlen(MASK);
        } else {
            p = start;
        }
    }
}

void conninfo_redact(char *text, size_t cap)
{
    one_line(text);
    /* masking can lengthen a very short secret: work on a roomy copy */
    size_t len = strlen(text);
    char *work = malloc(len * 4 + 64);
    strcpy(work, text);
    mask_password_keys(work);
    mask_uri_userinfo(work);
    snprintf(text, cap, "%s", work);
    free(work);
}

/* libpq expands dbname when it holds '=' or starts like a URI; otherwise
 * the whole conninfo is a database name. */
static int is_connection_string(const char *conninfo)
{
    return strchr(conninfo, '=') || strncmp(conninfo, "postgresql://", 13) == 0 ||
           strncmp(conninfo, "postgres://", 11) == 0;
}

PQconninfoOption *conninfo_parse(const char *conninfo)
{
    char *errmsg = NULL;
    PQconninfoOption *opts;
    if (is_connection_string(conninfo)) {
        opts = PQconninfoParse(conninfo, &errmsg);
    } else {
        /* a bare database name, quoted for the conninfo syntax */
        size_t len = strlen(conninfo);
        char *quoted = malloc(2 * len + 16), *q = quoted;
        q += sprintf(q, "dbname='");
        for (const char *p = conninfo; *p; p++) {
            if (*p == '\'' || *p == '\\')
                *q++ = '\\';
            *q++ = *p;
        }
        strcpy(q, "'");
        opts = PQconninfoParse(quoted, &errmsg);
        free(quoted);
    }
    PQfreemem(errmsg); /* it may quote the password: never shown */
    return opts;
}
