/* The libconfig reading helpers of the config loader: the first error as
 * "FILE:LINE: what is wrong", ${VAR} expansion, typed values with ranges,
 * known keys only. */
#include "config/config_read.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "obx/cloudevents.h"

int cfg_fail(cfg_reader *st, const config_setting_t *s, const char *fmt, ...)
{
    if (st->failed)
        return -1;
    st->failed = 1;
    char what[1024], shown[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* a value from the environment may hold a newline: one line, always */
    log_escape_text(shown, sizeof shown, what);
    int line = s ? config_setting_source_line(s) : 0;
    if (line > 0)
        snprintf(st->err, st->err_size, "%s:%d: %s", st->cfg->path, line, shown);
    else /* something missing has no line of its own */
        snprintf(st->err, st->err_size, "%s: %s", st->cfg->path, shown);
    return -1;
}

/* Row fields a destination template may name; they are not environment. */
static const char *const template_fields[] = {"event_type", "aggregate_type", "aggregate_id",
                                              "event_id", NULL};

int cfg_is_row_field(const char *name, size_t len)
{
    for (const char *const *f = template_fields; *f; f++)
        if (strlen(*f) == len && strncmp(*f, name, len) == 0)
            return 1;
    return 0;
}

/* The '}' closing the "${" whose inside starts at p, nesting counted. */
static const char *closing_brace(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (p[0] == '$' && p[1] == '{') {
            depth++;
            p++;
        } else if (*p == '}' && depth-- == 0) {
            return p;
        }
    }
    return NULL;
}

typedef struct text_buf {
    char *s;
    size_t len, cap;
} text_buf;

static void buf_put(text_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

/* Appends in[0..in_len) to out with ${NAME} and ${NAME:-default} expanded
 * from the environment; a default may itself hold ${...}. With keep_fields,
 * ${field} naming a row field is left for the router. */
static int expand_into(cfg_reader *st, const config_setting_t *s, const char *in, size_t in_len,
                       int keep_fields, text_buf *out, int depth)
{
    if (depth > 8)
        return cfg_fail(st, s, "setting \"%s\": ${...:-...} defaults nested too deep",
                        config_setting_name(s));
    const char *stop = in + in_len;
    for (const char *p = in; p < stop;) {
        if (!(p[0] == '$' && p + 1 < stop && p[1] == '{')) {
            buf_put(out, p, 1);
            p++;
            continue;
        }
        const char *name = p + 2, *end = closing_brace(name);
        if (!end || end >= stop)
            return cfg_fail(st, s, "setting \"%s\": unterminated ${ in value",
                            config_setting_name(s));
        const char *dflt = NULL;
        for (const char *q = name; q + 1 < end && !dflt; q++)
            if (q[0] == ':' && q[1] == '-')
                dflt = q;
        size_t name_len = (dflt ? dflt : end) - name;
        if (memchr(name, '$', name_len) || memchr(name, '{', name_len))
            return cfg_fail(st, s, "setting \"%s\": a variable name cannot hold \"${\"",
                            config_setting_name(s));
        if ((keep_fields && cfg_is_row_field(name, name_len)) ||
            (keep_fields >= CFG_KEEP_CE && obx_ce_placeholder(name, name_len) >= 0)) {
            buf_put(out, p, end + 1 - p);
            p = end + 1;
            continue;
        }
        char var[256];
        snprintf(var, sizeof var, "%.*s", (int)name_len, name);
        const char *env = getenv(var);
        if (env && *env) {
            buf_put(out, env, strlen(env));
        } else if (dflt) {
            if (expand_into(st, s, dflt + 2, end - (dflt + 2), keep_fields, out, depth + 1) < 0)
                return -1;
        } else if (keep_fields == CFG_KEEP_CE) {
            return cfg_fail(st, s,
                            "setting \"%s\": ${%s} is neither a CloudEvents placeholder "
                            "(${event_id}, ${event_type}, ${aggregate_type}, ${aggregate_id}, "
                            "${destination}) nor a set environment variable",
                            config_setting_name(s), var);
        } else if (keep_fields == CFG_KEEP_ROW) {
            return cfg_fail(st, s,
                            "setting \"%s\": ${%s} is neither a row field (${event_type}, "
                            "${aggregate_type}, ${aggregate_id}, ${event_id}) nor a set "
                            "environment variable",
                            config_setting_name(s), var);
        } else if (keep_fields == CFG_KEEP_OPTION) {
            return cfg_fail(st, s,
                            "setting \"%s\": environment variable %s is not set (nor is it a "
                            "message field a driver's template may name: ${event_id}, "
                            "${event_type}, ${aggregate_type}, ${aggregate_id}, ${destination})",
                            config_setting_name(s), var);
        } else {
            return cfg_fail(st, s, "setting \"%s\": environment variable %s is not set",
                            config_setting_name(s), var);
        }
        p = end + 1;
    }
    return 0;
}

char *cfg_expand(cfg_reader *st, const config_setting_t *s, const char *in, int keep_fields)
{
    text_buf out = {NULL, 0, 0};
    buf_put(&out, "", 0);
    if (expand_into(st, s, in, strlen(in), keep_fields, &out, 0) < 0) {
        free(out.s);
        return NULL;
    }
    return out.s;
}

/* Refuses members of group that are not in allowed (NULL-terminated). */
int cfg_check_keys(cfg_reader *st, const config_setting_t *group, const char *what,
                   const char *const *allowed)
{
    if (group && !config_setting_is_group(group))
        return cfg_fail(st, group, "%s must be a group { key = value; ... }", what);
    for (int i = 0; group && i < config_setting_length(group); i++) {
        const config_setting_t *m = config_setting_get_elem(group, i);
        const char *name = config_setting_name(m);
        if (!name)
            return cfg_fail(st, m, "%s must be a group { key = value; ... }", what);
        const char *const *a = allowed;
        while (*a && strcmp(*a, name) != 0)
            a++;
        if (!*a)
            return cfg_fail(st, m, "unknown setting \"%s\" in %s", name, what);
    }
    return 0;
}

const config_setting_t *cfg_member(const config_setting_t *group, const char *name)
{
    return group ? config_setting_get_member(group, name) : NULL;
}

int cfg_get_string(cfg_reader *st, const config_setting_t *group, const char *name, char **dst,
                   int keep_fields)
{
    const config_setting_t *s = cfg_member(group, name);
    if (!s)
        return 0;
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return cfg_fail(st, s, "setting \"%s\" must be a string", name);
    char *v = cfg_expand(st, s, config_setting_get_string(s), keep_fields);
    if (!v)
        return -1;
    free(*dst);
    *dst = v;
    return 1;
}

int cfg_get_int(cfg_reader *st, const config_setting_t *group, const char *name, int *dst,
                long long min, long long max)
{
    const config_setting_t *s = cfg_member(group, name);
    if (!s)
        return 0;
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return cfg_fail(st, s, "setting \"%s\" must be an integer", name);
    long long v = config_setting_get_int64(s);
    if (v < min || v > max)
        return cfg_fail(st, s, "setting \"%s\" must be between %lld and %lld", name, min, max);
    *dst = (int)v;
    return 1;
}

int cfg_get_bool(cfg_reader *st, const config_setting_t *group, const char *name, int *dst)
{
    const config_setting_t *s = cfg_member(group, name);
    if (!s)
        return 0;
    if (config_setting_type(s) != CONFIG_TYPE_BOOL)
        return cfg_fail(st, s, "setting \"%s\" must be true or false", name);
    *dst = config_setting_get_bool(s);
    return 1;
}

int cfg_get_double(cfg_reader *st, const config_setting_t *group, const char *name, double *dst,
                   double min, double max)
{
    const config_setting_t *s = cfg_member(group, name);
    if (!s)
        return 0;
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_FLOAT && t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return cfg_fail(st, s, "setting \"%s\" must be a number", name);
    double v =
        t == CONFIG_TYPE_FLOAT ? config_setting_get_float(s) : (double)config_setting_get_int64(s);
    if (v < min || v > max)
        return cfg_fail(st, s, "setting \"%s\" must be between %g and %g", name, min, max);
    *dst = v;
    return 1;
}

/* Reads a string setting that must be one of choices; *dst = its index. */
int cfg_get_enum(cfg_reader *st, const config_setting_t *group, const char *name, int *dst,
                 const char *const *choices)
{
    char *v = NULL;
    int r = cfg_get_string(st, group, name, &v, 0);
    if (r <= 0)
        return r;
    for (int i = 0; choices[i]; i++) {
        if (strcmp(v, choices[i]) == 0) {
            *dst = i;
            free(v);
            return 1;
        }
    }
    char list[256] = "";
    for (int i = 0; choices[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 choices[i]);
    cfg_fail(st, cfg_member(group, name), "setting \"%s\" is \"%s\"; expected one of %s", name, v,
             list);
    free(v);
    return -1;
}

/* Identifiers are quoted when used in SQL; refuse only what cannot be right. */
int cfg_check_identifier(cfg_reader *st, const config_setting_t *s, const char *what, const char *v)
{
    if (!*v || strlen(v) > 63)
        return cfg_fail(st, s, "%s must be 1 to 63 characters", what);
    for (const char *p = v; *p; p++)
        if (iscntrl((unsigned char)*p))
            return cfg_fail(st, s, "%s contains a control character", what);
    return 0;
}

/* A relative path in the config is relative to the config file, not to
 * wherever the relay was started. */
int cfg_resolve_relative(cfg_reader *st, const config_setting_t *s, char **path)
{
    char abs[4096];
    if (!*path || (*path)[0] == '/')
        return 0;
    if (config_resolve_path(st->cfg->path, *path, abs, sizeof abs) < 0)
        return cfg_fail(st, s, "path too long");
    free(*path);
    *path = strdup(abs);
    return 0;
}

int config_resolve_path(const char *config_path, const char *path, char *out, size_t out_size)
{
    const char *slash = config_path ? strrchr(config_path, '/') : NULL;
    int n = path[0] == '/' || !slash
                ? snprintf(out, out_size, "%s", path)
                : snprintf(out, out_size, "%.*s/%s", (int)(slash - config_path), config_path, path);
    return n >= 0 && (size_t)n < out_size ? 0 : -1;
}
