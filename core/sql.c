#include "sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void append_quoted(FILE *out, const char *s, char quote)
{
    fputc(quote, out);
    for (; *s; s++) {
        if (*s == quote)
            fputc(quote, out);
        fputc(*s, out);
    }
    fputc(quote, out);
}

void sql_quote_ident(char *out, size_t cap, const char *s)
{
    FILE *f = fmemopen(out, cap, "w");
    append_quoted(f, s, '"');
    fclose(f);
}

static const char *column(const relay_config *cfg, const char *name, size_t len)
{
    const cfg_columns *c = &cfg->col;
#define COL(f)                                                                                     \
    if (len == strlen(#f) && strncmp(name, #f, len) == 0)                                          \
        return c->f;
    COL(id)
    COL(event_id) COL(aggregate_type) COL(aggregate_id) COL(event_type) COL(payload) COL(headers)
        COL(destination) COL(created_at) COL(available_at) COL(attempts) COL(lease_owner)
            COL(lease_until) COL(published_at) COL(dead_at) COL(last_error)
#undef COL
                fprintf(stderr, "sql_render: unknown column %.*s\n", (int)len, name); /* a bug */
    abort();
}

char *sql_render(const relay_config *cfg, const char *tmpl)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    for (const char *p = tmpl; *p; p++) {
        const char *end;
        if (*p != '{' || !(end = strchr(p, '}'))) {
            fputc(*p, out);
            continue;
        }
        const char *key = p + 1;
        size_t len = end - key;
        if (len == 5 && strncmp(key, "table", 5) == 0) {
            append_quoted(out, cfg->schema, '"');
            fputc('.', out);
            append_quoted(out, cfg->table, '"');
        } else if (len == 6 && strncmp(key, "schema", 6) == 0) {
            append_quoted(out, cfg->schema, '"');
        } else if (len == 9 && strncmp(key, "lit.table", 9) == 0) {
            char both[300];
            snprintf(both, sizeof both, "%s.%s", cfg->schema, cfg->table);
            append_quoted(out, both, '\'');
        } else if (len > 6 && strncmp(key, "lit.c.", 6) == 0) {
            append_quoted(out, column(cfg, key + 6, len - 6), '\'');
        } else if (len > 2 && strncmp(key, "c.", 2) == 0) {
            append_quoted(out, column(cfg, key + 2, len - 2), '"');
        } else if (len > 2 && strncmp(key, "n.", 2) == 0) {
            char derived[300];
            snprintf(derived, sizeof derived, "%s%.*s", cfg->table, (int)(len - 2), key + 2);
            append_quoted(out, derived, '"');
        } else {
            fputc(*p, out); /* a literal brace, e.g. inside a JSON default */
            continue;
        }
        p = end;
    }
    fclose(out);
    return text;
}
