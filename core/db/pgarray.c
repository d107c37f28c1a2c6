#include "db/pgarray.h"

#include <stdlib.h>
#include <string.h>

void pgarray_init(pgarray *a)
{
    a->cap = 256;
    a->buf = malloc(a->cap);
    a->buf[0] = '{';
    a->len = 1;
    a->count = 0;
}

static void put(pgarray *a, char c)
{
    if (a->len + 2 > a->cap) { /* room for c, the closing brace and NUL */
        a->cap *= 2;
        a->buf = realloc(a->buf, a->cap);
    }
    a->buf[a->len++] = c;
}

void pgarray_add(pgarray *a, const char *value, int quoted)
{
    if (a->count++ > 0)
        put(a, ',');
    if (quoted)
        put(a, '"');
    for (const char *p = value; *p; p++) {
        if (quoted && (*p == '"' || *p == '\\'))
            put(a, '\\');
        put(a, *p);
    }
    if (quoted)
        put(a, '"');
}

const char *pgarray_text(pgarray *a)
{
    put(a, '}');
    a->buf[a->len] = '\0';
    a->len--; /* the brace is re-written by the next call */
    return a->buf;
}

void pgarray_free(pgarray *a)
{
    free(a->buf);
    a->buf = NULL;
}
