#include "config.h"

#include <ctype.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conninfo.h"
#include "loader.h"
#include "listen.h"
#include "obx/driver.h"

/* Loading state: the first error wins and stops the load. */
typedef struct loader_state {
    relay_config *cfg;
    char *err;
    size_t err_size;
    int failed;
} loader_state;

static int fail_at(loader_state *st, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(loader_state *st, const config_setting_t *s, const char *fmt, ...)
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

static int is_template_field(const char *name, size_t len)
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
static int expand_into(loader_state *st, const config_setting_t *s, const char *in, size_t in_len,
                       int keep_fields, text_buf *out, int depth)
{
    if (depth > 8)
        return fail_at(st, s, "setting \"%s\": ${...:-...} defaults nested too deep",
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
            return fail_at(st, s, "setting \"%s\": unterminated ${ in value",
                           config_setting_name(s));
        const char *dflt = NULL;
        for (const char *q = name; q + 1 < end && !dflt; q++)
            if (q[0] == ':' && q[1] == '-')
                dflt = q;
        size_t name_len = (dflt ? dflt : end) - name;
        if (memchr(name, '$', name_len) || memchr(name, '{', name_len))
            return fail_at(st, s, "setting \"%s\": a variable name cannot hold \"${\"",
                           config_setting_name(s));
        if (keep_fields && is_template_field(name, name_len)) {
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
        } else if (keep_fields) {
            return fail_at(st, s,
                           "setting \"%s\": ${%s} is neither a row field (${event_type}, "
                           "${aggregate_type}, ${aggregate_id}, ${event_id}) nor a set "
                           "environment variable",
                           config_setting_name(s), var);
        } else {
            return fail_at(st, s, "setting \"%s\": environment variable %s is not set",
                           config_setting_name(s), var);
        }
        p = end + 1;
    }
    return 0;
}

static char *expand_env(loader_state *st, const config_setting_t *s, const char *in,
                        int keep_fields)
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
static int check_keys(loader_state *st, const config_setting_t *group, const char *what,
                      const char *const *allowed)
{
    if (group && !config_setting_is_group(group))
        return fail_at(st, group, "%s must be a group { key = value; ... }", what);
    for (int i = 0; group && i < config_setting_length(group); i++) {
        const config_setting_t *m = config_setting_get_elem(group, i);
        const char *name = config_setting_name(m);
        if (!name)
            return fail_at(st, m, "%s must be a group { key = value; ... }", what);
        const char *const *a = allowed;
        while (*a && strcmp(*a, name) != 0)
            a++;
        if (!*a)
            return fail_at(st, m, "unknown setting \"%s\" in %s", name, what);
    }
    return 0;
}

static const config_setting_t *member(const config_setting_t *group, const char *name)
{
    return group ? config_setting_get_member(group, name) : NULL;
}

static int get_string(loader_state *st, const config_setting_t *group, const char *name, char **dst,
                      int keep_fields)
{
    const config_setting_t *s = member(group, name);
    if (!s)
        return 0;
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return fail_at(st, s, "setting \"%s\" must be a string", name);
    char *v = expand_env(st, s, config_setting_get_string(s), keep_fields);
    if (!v)
        return -1;
    free(*dst);
    *dst = v;
    return 1;
}

static int get_int(loader_state *st, const config_setting_t *group, const char *name, int *dst,
                   long long min, long long max)
{
    const config_setting_t *s = member(group, name);
    if (!s)
        return 0;
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return fail_at(st, s, "setting \"%s\" must be an integer", name);
    long long v = config_setting_get_int64(s);
    if (v < min || v > max)
        return fail_at(st, s, "setting \"%s\" must be between %lld and %lld", name, min, max);
    *dst = (int)v;
    return 1;
}

static int get_double(loader_state *st, const config_setting_t *group, const char *name,
                      double *dst, double min, double max)
{
    const config_setting_t *s = member(group, name);
    if (!s)
        return 0;
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_FLOAT && t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return fail_at(st, s, "setting \"%s\" must be a number", name);
    double v =
        t == CONFIG_TYPE_FLOAT ? config_setting_get_float(s) : (double)config_setting_get_int64(s);
    if (v < min || v > max)
        return fail_at(st, s, "setting \"%s\" must be between %g and %g", name, min, max);
    *dst = v;
    return 1;
}

/* Reads a string setting that must be one of choices; *dst = its index. */
static int get_enum(loader_state *st, const config_setting_t *group, const char *name, int *dst,
                    const char *const *choices)
{
    char *v = NULL;
    int r = get_string(st, group, name, &v, 0);
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
    fail_at(st, member(group, name), "setting \"%s\" is \"%s\"; expected one of %s", name, v, list);
    free(v);
    return -1;
}

/* Identifiers are quoted when used in SQL; refuse only what cannot be right. */
static int check_identifier(loader_state *st, const config_setting_t *s, const char *what,
                            const char *v)
{
    if (!*v || strlen(v) > 63)
        return fail_at(st, s, "%s must be 1 to 63 characters", what);
    for (const char *p = v; *p; p++)
        if (iscntrl((unsigned char)*p))
            return fail_at(st, s, "%s contains a control character", what);
    return 0;
}

/* clang-format off */
#define COLUMN(f) {#f, offsetof(cfg_columns, f)}
/* clang-format on */
static const struct {
    const char *name;
    size_t offset;
} column_names[] = {
    COLUMN(id),          COLUMN(event_id),     COLUMN(aggregate_type), COLUMN(aggregate_id),
    COLUMN(event_type),  COLUMN(payload),      COLUMN(headers),        COLUMN(destination),
    COLUMN(created_at),  COLUMN(available_at), COLUMN(attempts),       COLUMN(lease_owner),
    COLUMN(lease_until), COLUMN(published_at), COLUMN(dead_at),        COLUMN(last_error),
};
#define COLUMN_COUNT (sizeof column_names / sizeof column_names[0])

static char **column_slot(cfg_columns *col, size_t i)
{
    return (char **)((char *)col + column_names[i].offset);
}

static void load_database(loader_state *st, const config_setting_t *db)
{
    static const char *const keys[] = {"conninfo", "schema", "table", "columns", NULL};
    relay_config *cfg = st->cfg;
    if (!db) {
        fail_at(st, NULL, "the database section is missing: database = { conninfo = \"...\"; };");
        return;
    }
    if (check_keys(st, db, "database", keys) < 0)
        return;
    if (!member(db, "conninfo")) {
        fail_at(st, db, "database.conninfo is required (a libpq connection string or URI)");
        return;
    }
    if (get_string(st, db, "conninfo", &cfg->conninfo, 0) < 0 ||
        get_string(st, db, "schema", &cfg->schema, 0) < 0 ||
        get_string(st, db, "table", &cfg->table, 0) < 0)
        return;
    /* libpq's own message would quote the text, password included */
    PQconninfoOption *parsed = conninfo_parse(cfg->conninfo);
    if (!parsed) {
        fail_at(st, member(db, "conninfo"),
                "database.conninfo is not a valid libpq connection string or URI (check its "
                "quoting and %%-escapes; libpq's message is not shown as it may hold the "
                "password)");
        return;
    }
    PQconninfoFree(parsed);
    if (check_identifier(st, member(db, "schema"), "database.schema", cfg->schema) < 0 ||
        check_identifier(st, member(db, "table"), "database.table", cfg->table) < 0)
        return;
    const config_setting_t *cols = member(db, "columns");
    if (!cols)
        return;
    if (!config_setting_is_group(cols)) {
        fail_at(st, cols, "database.columns must be a group { id = \"...\"; ... }");
        return;
    }
    const char *names[COLUMN_COUNT + 1];
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        names[i] = column_names[i].name;
    names[COLUMN_COUNT] = NULL;
    if (check_keys(st, cols, "database.columns", names) < 0)
        return;
    for (size_t i = 0; i < COLUMN_COUNT; i++) {
        char **slot = column_slot(&cfg->col, i);
        if (get_string(st, cols, names[i], slot, 0) > 0 &&
            check_identifier(st, member(cols, names[i]), "column name", *slot) < 0)
            return;
    }
}

/* A relative path in the config is relative to the config file, not to
 * wherever the relay was started. */
static int resolve_relative(loader_state *st, const config_setting_t *s, char **path)
{
    char abs[4096];
    if (!*path || (*path)[0] == '/')
        return 0;
    if (loader_resolve_path(st->cfg->path, *path, abs, sizeof abs) < 0)
        return fail_at(st, s, "path too long");
    free(*path);
    *path = strdup(abs);
    return 0;
}

static void load_relay(loader_state *st, const config_setting_t *r)
{
    static const char *const keys[] = {"workers",
                                       "batch_size",
                                       "lease_seconds",
                                       "poll_interval_ms",
                                       "shutdown_timeout_ms",
                                       "ordering",
                                       "on_dead",
                                       "max_attempts",
                                       "backoff",
                                       "retention",
                                       "retention_hours",
                                       "max_payload_bytes",
                                       "drivers_dir",
                                       NULL};
    static const char *const backoff_keys[] = {"initial_ms", "max_ms", "multiplier", "jitter",
                                               NULL};
    static const char *const orderings[] = {"aggregate", "none", NULL};
    static const char *const policies[] = {"skip", "block", NULL};
    static const char *const retentions[] = {"mark", "delete", NULL};
    relay_config *cfg = st->cfg;
    int lease_s = cfg->lease_ms / 1000, ordering = cfg->ordering, on_dead = cfg->on_dead,
        retention = cfg->retention;
    if (check_keys(st, r, "relay", keys) < 0 ||
        get_int(st, r, "workers", &cfg->workers, 1, 256) < 0 ||
        get_int(st, r, "batch_size", &cfg->batch_size, 1, 100000) < 0 ||
        get_int(st, r, "lease_seconds", &lease_s, 1, 86400) < 0 ||
        get_int(st, r, "poll_interval_ms", &cfg->poll_interval_ms, 1, 3600000) < 0 ||
        get_int(st, r, "shutdown_timeout_ms", &cfg->shutdown_timeout_ms, 0, 3600000) < 0 ||
        get_enum(st, r, "ordering", &ordering, orderings) < 0 ||
        get_enum(st, r, "on_dead", &on_dead, policies) < 0 ||
        get_int(st, r, "max_attempts", &cfg->max_attempts, 1, 1000000) < 0 ||
        get_enum(st, r, "retention", &retention, retentions) < 0 ||
        get_int(st, r, "retention_hours", &cfg->retention_hours, 0, 1000000) < 0 ||
        get_int(st, r, "max_payload_bytes", &cfg->max_payload_bytes, 1, 1 << 30) < 0 ||
        get_string(st, r, "drivers_dir", &cfg->drivers_dir, 0) < 0 ||
        resolve_relative(st, member(r, "drivers_dir"), &cfg->drivers_dir) < 0)
        return;
    cfg->lease_ms = lease_s * 1000;
    cfg->ordering = ordering;
    cfg->on_dead = on_dead;
    cfg->retention = retention;
    const config_setting_t *b = member(r, "backoff");
    if (check_keys(st, b, "relay.backoff", backoff_keys) < 0 ||
        get_int(st, b, "initial_ms", &cfg->backoff_initial_ms, 1, 86400000) < 0 ||
        get_int(st, b, "max_ms", &cfg->backoff_max_ms, 1, 86400000) < 0 ||
        get_double(st, b, "multiplier", &cfg->backoff_multiplier, 1.0, 100.0) < 0 ||
        get_double(st, b, "jitter", &cfg->backoff_jitter, 0.0, 1.0) < 0)
        return;
    if (cfg->backoff_max_ms < cfg->backoff_initial_ms)
        fail_at(st, b, "relay.backoff.max_ms is below initial_ms");
}

static void load_log(loader_state *st, const config_setting_t *l, const config_setting_t *m)
{
    static const char *const keys[] = {"level", "format", NULL};
    static const char *const mkeys[] = {"listen", NULL};
    static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
    static const char *const formats[] = {"text", "json", NULL};
    int level = st->cfg->log_level, format = st->cfg->log_format;
    if (check_keys(st, l, "log", keys) < 0 || get_enum(st, l, "level", &level, levels) < 0 ||
        get_enum(st, l, "format", &format, formats) < 0 ||
        check_keys(st, m, "metrics", mkeys) < 0 ||
        get_string(st, m, "listen", &st->cfg->metrics_listen, 0) < 0)
        return;
    char why[256];
    if (st->cfg->metrics_listen &&
        listen_parse(st->cfg->metrics_listen, NULL, why, sizeof why) < 0) {
        fail_at(st, member(m, "listen"), "%s", why);
        return;
    }
    st->cfg->log_level = level;
    st->cfg->log_format = format;
}

static void load_option(loader_state *st, const config_setting_t *s, cfg_value *v)
{
    v->name = strdup(config_setting_name(s));
    v->line = config_setting_source_line(s);
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING:
        v->type = OBX_OPT_STRING;
        v->s = expand_env(st, s, config_setting_get_string(s), 0);
        break;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        v->type = OBX_OPT_INT;
        v->i = config_setting_get_int64(s);
        break;
    case CONFIG_TYPE_FLOAT:
        v->type = OBX_OPT_DOUBLE;
        v->d = config_setting_get_float(s);
        break;
    case CONFIG_TYPE_BOOL:
        v->type = OBX_OPT_BOOL;
        v->b = config_setting_get_bool(s);
        break;
    default: fail_at(st, s, "option \"%s\" must be a string, number or boolean", v->name);
    }
}

static void load_properties(loader_state *st, const config_setting_t *list, cfg_output *out)
{
    if (!config_setting_is_list(list) && !config_setting_is_array(list)) {
        fail_at(st, list, "properties must be a list of [\"key\", \"value\"] pairs");
        return;
    }
    int n = config_setting_length(list);
    out->properties = calloc(n ? n : 1, sizeof *out->properties);
    for (int i = 0; i < n && !st->failed; i++) {
        const config_setting_t *pair = config_setting_get_elem(list, i);
        if (!config_setting_is_array(pair) || config_setting_length(pair) != 2 ||
            config_setting_type(config_setting_get_elem(pair, 0)) != CONFIG_TYPE_STRING ||
            config_setting_type(config_setting_get_elem(pair, 1)) != CONFIG_TYPE_STRING) {
            fail_at(st, pair, "each property must be a [\"key\", \"value\"] pair of strings");
            return;
        }
        cfg_pair *p = &out->properties[out->property_count++];
        p->key = strdup(config_setting_get_string_elem(pair, 0));
        p->value = expand_env(st, pair, config_setting_get_string_elem(pair, 1), 0);
    }
}

static void load_outputs(loader_state *st, const config_setting_t *list)
{
    static const char *const keys[] = {"name", "driver", "options", "properties", NULL};
    relay_config *cfg = st->cfg;
    if (!list || !config_setting_is_list(list) || config_setting_length(list) == 0) {
        fail_at(st, list,
                "outputs must be a non-empty list: outputs = ( { name = ...; driver = ...; } );");
        return;
    }
    int n = config_setting_length(list);
    cfg->outputs = calloc(n, sizeof *cfg->outputs);
    for (int i = 0; i < n && !st->failed; i++) {
        const config_setting_t *o = config_setting_get_elem(list, i);
        cfg_output *out = &cfg->outputs[cfg->output_count++];
        out->line = config_setting_source_line(o);
        if (!config_setting_is_group(o)) {
            fail_at(st, o, "each output must be a group { name = ...; driver = ...; }");
            return;
        }
        if (check_keys(st, o, "output", keys) < 0 || get_string(st, o, "name", &out->name, 0) < 0 ||
            get_string(st, o, "driver", &out->driver, 0) < 0)
            return;
        if (!out->name || !out->driver) {
            fail_at(st, o, "output needs both name and driver");
            return;
        }
        /* a driver given as a path (it has a slash) follows the config file */
        if (strchr(out->driver, '/') && resolve_relative(st, member(o, "driver"), &out->driver) < 0)
            return;
        for (size_t j = 0; j + 1 < cfg->output_count; j++)
            if (strcmp(cfg->outputs[j].name, out->name) == 0) {
                fail_at(st, member(o, "name"), "output name \"%s\" is used twice", out->name);
                return;
            }
        const config_setting_t *opts = member(o, "options");
        if (opts) {
            if (!config_setting_is_group(opts)) {
                fail_at(st, opts, "options must be a group { key = value; ... }");
                return;
            }
            int m = config_setting_length(opts);
            out->options = calloc(m ? m : 1, sizeof *out->options);
            for (int j = 0; j < m && !st->failed; j++)
                load_option(st, config_setting_get_elem(opts, j),
                            &out->options[out->option_count++]);
        }
        const config_setting_t *props = member(o, "properties");
        if (props)
            load_properties(st, props, out);
    }
}

/* Checks ${...} in a destination template name known row fields. */
static void check_template(loader_state *st, const config_setting_t *s, const char *tpl)
{
    for (const char *p = strstr(tpl, "${"); p; p = strstr(p + 2, "${")) {
        const char *end = strchr(p, '}');
        if (!end || !is_template_field(p + 2, end - p - 2)) {
            fail_at(st, s,
                    "destination \"%s\": unknown field; use ${event_type}, ${aggregate_type}, "
                    "${aggregate_id} or ${event_id}",
                    tpl);
            return;
        }
    }
}

/* Where an event goes when its route names no destination. */
#define DEFAULT_DESTINATION "outbox.${aggregate_type}"

static void load_routes(loader_state *st, const config_setting_t *list)
{
    static const char *const keys[] = {"event_type", "aggregate_type", "output", "destination",
                                       NULL};
    relay_config *cfg = st->cfg;
    if (!list) { /* one default route: everything to the first output */
        cfg->routes = calloc(1, sizeof *cfg->routes);
        cfg->route_count = 1;
        cfg->routes[0] = (cfg_route){strdup("*"),
                                     strdup("*"),
                                     strdup(cfg->outputs[0].name),
                                     0,
                                     strdup(DEFAULT_DESTINATION),
                                     0};
        return;
    }
    if (!config_setting_is_list(list) || config_setting_length(list) == 0) {
        fail_at(st, list, "routes must be a non-empty list of groups");
        return;
    }
    int n = config_setting_length(list);
    cfg->routes = calloc(n, sizeof *cfg->routes);
    for (int i = 0; i < n && !st->failed; i++) {
        const config_setting_t *r = config_setting_get_elem(list, i);
        cfg_route *route = &cfg->routes[cfg->route_count++];
        route->line = config_setting_source_line(r);
        if (!config_setting_is_group(r)) {
            fail_at(st, r, "each route must be a group { output = ...; destination = ...; }");
            return;
        }
        if (check_keys(st, r, "route", keys) < 0 ||
            get_string(st, r, "event_type", &route->event_type, 0) < 0 ||
            get_string(st, r, "aggregate_type", &route->aggregate_type, 0) < 0 ||
            get_string(st, r, "output", &route->output, 0) < 0 ||
            get_string(st, r, "destination", &route->destination, 1) < 0)
            return;
        if (!route->event_type)
            route->event_type = strdup("*");
        if (!route->aggregate_type)
            route->aggregate_type = strdup("*");
        if (!route->destination)
            route->destination = strdup(DEFAULT_DESTINATION);
        check_template(st, member(r, "destination"), route->destination);
        if (!route->output) {
            route->output = strdup(cfg->outputs[0].name);
            if (cfg->output_count > 1)
                fail_at(st, r, "route needs an output (there are several)");
        }
        size_t j = 0;
        while (j < cfg->output_count && strcmp(cfg->outputs[j].name, route->output) != 0)
            j++;
        if (j == cfg->output_count) {
            fail_at(st, member(r, "output"), "route names output \"%s\", which is not defined",
                    route->output);
            return;
        }
        route->output_index = j;
    }
}

static void set_defaults(relay_config *cfg)
{
    cfg->schema = strdup("public");
    cfg->table = strdup("outbox");
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        *column_slot(&cfg->col, i) = strdup(column_names[i].name);
    cfg->workers = 1;
    cfg->batch_size = 500;
    cfg->lease_ms = 30000;
    cfg->poll_interval_ms = 1000;
    cfg->shutdown_timeout_ms = 10000;
    cfg->ordering = ORDERING_AGGREGATE;
    cfg->on_dead = DEAD_SKIP;
    cfg->max_attempts = 10;
    cfg->backoff_initial_ms = 500;
    cfg->backoff_max_ms = 300000;
    cfg->backoff_multiplier = 2.0;
    cfg->backoff_jitter = 0.2;
    cfg->retention = RETAIN_MARK;
    cfg->retention_hours = 168;
    cfg->max_payload_bytes = 1 << 20;
    cfg->log_level = OBX_LOG_INFO;
    cfg->log_format = LOG_FORMAT_TEXT;
}

relay_config *config_load(const char *path, char *err, size_t err_size)
{
    static const char *const keys[] = {"database", "relay",  "log", "metrics",
                                       "outputs",  "routes", NULL};
    relay_config *cfg = calloc(1, sizeof *cfg);
    cfg->path = strdup(path);
    set_defaults(cfg);
    loader_state st = {cfg, err, err_size, 0};

    config_t lc;
    config_init(&lc);
    if (!config_read_file(&lc, path)) {
        if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
            snprintf(err, err_size, "%s: cannot read config file", path);
        else
            snprintf(err, err_size, "%s:%d: %s",
                     config_error_file(&lc) ? config_error_file(&lc) : path, config_error_line(&lc),
                     config_error_text(&lc));
        config_destroy(&lc);
        config_free(cfg);
        return NULL;
    }
    const config_setting_t *root = config_root_setting(&lc);
    const config_setting_t *db = member(root, "database");
    if (check_keys(&st, root, "the top level", keys) == 0) {
        load_database(&st, db);
        load_relay(&st, member(root, "relay"));
        load_log(&st, member(root, "log"), member(root, "metrics"));
        if (!st.failed)
            load_outputs(&st, member(root, "outputs"));
        if (!st.failed)
            load_routes(&st, member(root, "routes"));
    }
    config_destroy(&lc);
    if (st.failed) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

void config_free(relay_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->output_count; i++) {
        cfg_output *o = &cfg->outputs[i];
        for (size_t j = 0; j < o->option_count; j++) {
            free(o->options[j].name);
            free(o->options[j].s);
        }
        for (size_t j = 0; j < o->property_count; j++) {
            free(o->properties[j].key);
            free(o->properties[j].value);
        }
        free(o->options);
        free(o->properties);
        free(o->name);
        free(o->driver);
    }
    for (size_t i = 0; i < cfg->route_count; i++) {
        cfg_route *r = &cfg->routes[i];
        free(r->event_type);
        free(r->aggregate_type);
        free(r->output);
        free(r->destination);
    }
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        free(*column_slot(&cfg->col, i));
    free(cfg->outputs);
    free(cfg->routes);
    free(cfg->path);
    free(cfg->conninfo);
    free(cfg->schema);
    free(cfg->table);
    free(cfg->drivers_dir);
    free(cfg->metrics_listen);
    free(cfg);
}

const cfg_value *config_output_option(const cfg_output *out, const char *name)
{
    for (size_t i = 0; i < out->option_count; i++)
        if (strcmp(out->options[i].name, name) == 0)
            return &out->options[i];
    return NULL;
}
