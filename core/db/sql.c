#include "db/sql.h"

#include <stddef.h>
#include <stdint.h>
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

/* A string literal read the same with standard_conforming_strings on or
 * off: E'' syntax (backslashes doubled) whenever there is a backslash. */
static void append_literal(FILE *out, const char *s)
{
    if (strchr(s, '\\'))
        fputc('E', out);
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            fputc(*s, out);
        fputc(*s, out);
    }
    fputc('\'', out);
}

void sql_quote_ident(char *out, size_t cap, const char *s)
{
    FILE *f = fmemopen(out, cap, "w");
    append_quoted(f, s, '"');
    fclose(f);
}

/* FNV-1a: stable across versions and machines, as installed names must be. */
static uint32_t name_hash(const char *a, const char *b)
{
    uint32_t h = 2166136261u;
    for (const char *p = a; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    if (b) {
        h = (h ^ 0u) * 16777619u; /* separator: ("ab","c") differs from ("a","bc") */
        for (const char *p = b; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
    }
    return h;
}

/* At most max bytes of s, not cutting a UTF-8 sequence. */
static size_t clip_utf8(const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

void sql_derived_name(const relay_config *cfg, const char *suffix, char *out, size_t cap)
{
    size_t table_len = strlen(cfg->table), suffix_len = strlen(suffix);
    if (table_len + suffix_len <= SQL_NAME_MAX) {
        snprintf(out, cap, "%s%s", cfg->table, suffix);
        return;
    }
    size_t keep = clip_utf8(cfg->table, SQL_NAME_MAX - 9 - suffix_len);
    snprintf(out, cap, "%.*s_%08x%s", (int)keep, cfg->table, name_hash(cfg->table, NULL), suffix);
}

void sql_channel_name(const relay_config *cfg, char *out, size_t cap)
{
    size_t len = strlen(cfg->schema) + 1 + strlen(cfg->table);
    if (len <= SQL_NAME_MAX && !strchr(cfg->schema, '.') && !strchr(cfg->table, '.')) {
        snprintf(out, cap, "%s.%s", cfg->schema, cfg->table);
        return;
    }
    char both[2 * SQL_NAME_MAX + 2];
    snprintf(both, sizeof both, "%s_%s", cfg->schema, cfg->table);
    for (char *p = both; *p; p++)
        if (*p == '.')
            *p = '_';
    size_t keep = clip_utf8(both, SQL_NAME_MAX - 9);
    snprintf(out, cap, "%.*s_%08x", (int)keep, both, name_hash(cfg->schema, cfg->table));
}

int sql_cursor_shard_key(const relay_config *cfg)
{
    return cfg->cursor_shards > 1 ? cfg->cursor_shards + cfg->cursor_shard : 0;
}

static const char *column(const relay_config *cfg, const char *name, size_t len)
{
    const char *mapped = config_column(cfg, name, len);
    if (mapped)
        return mapped;
    fprintf(stderr, "sql_render: unknown column %.*s\n", (int)len, name); /* a bug */
    abort();
}

static char *render_with_tag(const relay_config *cfg, const char *tmpl, const char *tag)
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
        char name[2 * SQL_NAME_MAX + 2];
        if (len == 5 && strncmp(key, "table", 5) == 0) {
            append_quoted(out, cfg->schema, '"');
            fputc('.', out);
            append_quoted(out, cfg->table, '"');
        } else if (len == 6 && strncmp(key, "schema", 6) == 0) {
            append_quoted(out, cfg->schema, '"');
        } else if (len == 12 && strncmp(key, "cursor.shard", 12) == 0) {
            fprintf(out, "%d", sql_cursor_shard_key(cfg));
        } else if (len == 15 && strncmp(key, "cursor.in_shard", 15) == 0) {
            if (cfg->cursor_shards > 1) {
                char shard[96];
                snprintf(shard, sizeof shard, SQL_CURSOR_HASH("o.") " = %d", cfg->cursor_shards - 1,
                         cfg->cursor_shard);
                char *text = render_with_tag(cfg, shard, tag);
                fputs(text, out);
                free(text);
            } else {
                fputs("true", out);
            }
        } else if (len == 1 && key[0] == '$') {
            fputs(tag, out);
        } else if (len == 9 && strncmp(key, "lit.table", 9) == 0) {
            snprintf(name, sizeof name, "%s.%s", cfg->schema, cfg->table);
            append_literal(out, name);
        } else if (len == 11 && strncmp(key, "lit.channel", 11) == 0) {
            sql_channel_name(cfg, name, sizeof name);
            append_literal(out, name);
        } else if (len > 6 && strncmp(key, "lit.c.", 6) == 0) {
            append_literal(out, column(cfg, key + 6, len - 6));
        } else if (len > 2 && strncmp(key, "c.", 2) == 0) {
            append_quoted(out, column(cfg, key + 2, len - 2), '"');
        } else if (len > 2 && len < 40 && strncmp(key, "n.", 2) == 0) {
            char suffix[40];
            snprintf(suffix, sizeof suffix, "%.*s", (int)(len - 2), key + 2);
            sql_derived_name(cfg, suffix, name, sizeof name);
            append_quoted(out, name, '"');
        } else {
            fputc(*p, out); /* a literal brace, e.g. inside a JSON default */
            continue;
        }
        p = end;
    }
    fclose(out);
    return text;
}

/* not inlined: gcc 12 at -O2 then mistakes the freed and re-rendered text
 * of sql_render's loop for a dangling pointer */
__attribute__((noinline)) static size_t count(const char *text, const char *what)
{
    size_t n = 0, at = 0;
    for (const char *hit; (hit = strstr(text + at, what)) != NULL; at = (size_t)(hit - text) + 1)
        n++;
    return n;
}

char *sql_render(const relay_config *cfg, const char *tmpl)
{
    /* a name may hold "$$": pick a tag no rendered name contains */
    size_t tags = count(tmpl, "{$}");
    char tag[32] = "$obx$";
    for (int i = 1;; i++) {
        char *text = render_with_tag(cfg, tmpl, tag);
        if (tags == 0 || count(text, tag) == tags)
            return text;
        free(text);
        snprintf(tag, sizeof tag, "$obx%d$", i);
    }
}
