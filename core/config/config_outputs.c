/* The config's outputs (driver, options, native properties) and routes
 * (globs, output, destination template). */
#include "config/config_outputs.h"

#include <stdlib.h>
#include <string.h>

#include "obx/cloudevents.h"
#include "obx/driver.h"

/* A driver option's ${event_type} and the like are the driver's to fill
 * (a template), not environment variables; in the options that are
 * CloudEvents templates, an unknown ${...} is refused here already. */
static int option_keeps(const char *name)
{
    static const char *const templates[] = OBX_CE_TEMPLATE_OPTIONS;
    for (size_t i = 0; i < sizeof templates / sizeof *templates; i++)
        if (strcmp(name, templates[i]) == 0)
            return CFG_KEEP_CE;
    return CFG_KEEP_OPTION;
}

static void load_option(cfg_reader *st, const config_setting_t *s, cfg_value *v)
{
    v->name = strdup(config_setting_name(s));
    v->line = config_setting_source_line(s);
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING:
        v->type = OBX_OPT_STRING;
        v->s = cfg_expand(st, s, config_setting_get_string(s), option_keeps(v->name));
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
    default: cfg_fail(st, s, "option \"%s\" must be a string, number or boolean", v->name);
    }
}

static void load_properties(cfg_reader *st, const config_setting_t *list, cfg_output *out)
{
    if (!config_setting_is_list(list) && !config_setting_is_array(list)) {
        cfg_fail(st, list, "properties must be a list of [\"key\", \"value\"] pairs");
        return;
    }
    int n = config_setting_length(list);
    out->properties = calloc(n ? n : 1, sizeof *out->properties);
    for (int i = 0; i < n && !st->failed; i++) {
        const config_setting_t *pair = config_setting_get_elem(list, i);
        if (!config_setting_is_array(pair) || config_setting_length(pair) != 2 ||
            config_setting_type(config_setting_get_elem(pair, 0)) != CONFIG_TYPE_STRING ||
            config_setting_type(config_setting_get_elem(pair, 1)) != CONFIG_TYPE_STRING) {
            cfg_fail(st, pair, "each property must be a [\"key\", \"value\"] pair of strings");
            return;
        }
        cfg_pair *p = &out->properties[out->property_count++];
        p->key = strdup(config_setting_get_string_elem(pair, 0));
        p->value = cfg_expand(st, pair, config_setting_get_string_elem(pair, 1), 0);
    }
}

void config_load_outputs(cfg_reader *st, const config_setting_t *list)
{
    static const char *const keys[] = {
        "name", "driver", "options", "properties", "tombstones", "one_per_aggregate", NULL};
    relay_config *cfg = st->cfg;
    if (!list || !config_setting_is_list(list) || config_setting_length(list) == 0) {
        cfg_fail(st, list,
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
            cfg_fail(st, o, "each output must be a group { name = ...; driver = ...; }");
            return;
        }
        if (cfg_check_keys(st, o, "output", keys) < 0 ||
            cfg_get_string(st, o, "name", &out->name, 0) < 0 ||
            cfg_get_string(st, o, "driver", &out->driver, 0) < 0 ||
            cfg_get_bool(st, o, "tombstones", &out->tombstones) < 0 ||
            cfg_get_bool(st, o, "one_per_aggregate", &out->one_per_aggregate) < 0)
            return;
        if (!out->name || !out->driver) {
            cfg_fail(st, o, "output needs both name and driver");
            return;
        }
        /* a driver given as a path (it has a slash) follows the config file */
        if (strchr(out->driver, '/') &&
            cfg_resolve_relative(st, cfg_member(o, "driver"), &out->driver) < 0)
            return;
        for (size_t j = 0; j + 1 < cfg->output_count; j++)
            if (strcmp(cfg->outputs[j].name, out->name) == 0) {
                cfg_fail(st, cfg_member(o, "name"), "output name \"%s\" is used twice", out->name);
                return;
            }
        const config_setting_t *opts = cfg_member(o, "options");
        if (opts) {
            if (!config_setting_is_group(opts)) {
                cfg_fail(st, opts, "options must be a group { key = value; ... }");
                return;
            }
            int m = config_setting_length(opts);
            out->options = calloc(m ? m : 1, sizeof *out->options);
            for (int j = 0; j < m && !st->failed; j++)
                load_option(st, config_setting_get_elem(opts, j),
                            &out->options[out->option_count++]);
        }
        const config_setting_t *props = cfg_member(o, "properties");
        if (props)
            load_properties(st, props, out);
    }
}

/* Checks ${...} in a template (a destination, a header's value) name known
 * row fields. */
static void check_template(cfg_reader *st, const config_setting_t *s, const char *what,
                           const char *tpl)
{
    for (const char *p = strstr(tpl, "${"); p; p = strstr(p + 2, "${")) {
        const char *end = strchr(p, '}');
        if (!end || !cfg_is_row_field(p + 2, end - p - 2)) {
            cfg_fail(st, s,
                     "%s \"%s\": unknown field; use ${event_type}, ${aggregate_type}, "
                     "${aggregate_id} or ${event_id}",
                     what, tpl);
            return;
        }
    }
}

/* Where an event goes when its route names no destination. */
#define DEFAULT_DESTINATION "outbox.${aggregate_type}"

/* A route's headers = { name = "glob"; ... }: every header must be present
 * with a matching value. */
static void load_header_matches(cfg_reader *st, const config_setting_t *group, cfg_route *route)
{
    if (!group)
        return;
    int n = config_setting_length(group);
    if (!config_setting_is_group(group) || n == 0) {
        cfg_fail(st, group, "route headers must be a group of name = \"glob\" pairs");
        return;
    }
    route->headers = calloc(n, sizeof *route->headers);
    for (int k = 0; k < n; k++) {
        const config_setting_t *h = config_setting_get_elem(group, k);
        const char *glob = config_setting_get_string(h);
        if (!glob) {
            cfg_fail(st, h, "route header %s must be a string (a glob on its value)",
                     config_setting_name(h));
            return;
        }
        route->headers[route->header_count++] =
            (cfg_header_match){strdup(config_setting_name(h)), strdup(glob)};
    }
}

/* A route's drop_headers = [ "glob", ... ], rename_headers = { old = "new"; }
 * and set_headers = { name = "template"; }: how the row's headers are
 * shaped for its output, kept in the order they apply. */
static void load_header_shaping(cfg_reader *st, const config_setting_t *r, cfg_route *route)
{
    static const char *const keys[] = {"drop_headers", "rename_headers", "set_headers"};
    size_t total = 0;
    for (int kind = HEADER_DROP; kind <= HEADER_SET; kind++) {
        const config_setting_t *s = cfg_member(r, keys[kind]);
        if (!s)
            continue;
        int want_list = kind == HEADER_DROP;
        if ((want_list ? !config_setting_is_array(s) && !config_setting_is_list(s)
                       : !config_setting_is_group(s)) ||
            config_setting_length(s) == 0) {
            cfg_fail(st, s,
                     want_list ? "drop_headers must be a list of globs on header names"
                               : "%s must be a group of name = \"value\" pairs",
                     keys[kind]);
            return;
        }
        total += config_setting_length(s);
    }
    if (!total)
        return;
    route->shape = calloc(total, sizeof *route->shape);
    for (int kind = HEADER_DROP; kind <= HEADER_SET; kind++) {
        const config_setting_t *s = cfg_member(r, keys[kind]);
        for (int k = 0; s && k < config_setting_length(s); k++) {
            const config_setting_t *e = config_setting_get_elem(s, k);
            const char *v = config_setting_get_string(e);
            if (!v || !*v) {
                cfg_fail(st, e, "%s: each entry must be a non-empty string", keys[kind]);
                return;
            }
            if (kind == HEADER_SET)
                check_template(st, e, "set_headers", v);
            route->shape[route->shape_count++] =
                (cfg_header_rule){kind, strdup(kind == HEADER_DROP ? v : config_setting_name(e)),
                                  kind == HEADER_DROP ? NULL : strdup(v)};
        }
    }
}

/* A drop route names no output and no destination: its events go nowhere. */
static int load_drop(cfg_reader *st, const config_setting_t *r, cfg_route *route)
{
    if (cfg_get_bool(st, r, "drop", &route->drop) < 0 || !route->drop)
        return 0;
    if (route->output || route->fanout_count || route->destination) {
        cfg_fail(st, r, "a route with drop = true takes no output and no destination");
        return -1;
    }
    route->output = strdup("");
    route->destination = strdup("");
    route->output_index = st->cfg->output_count;
    return 0;
}

static void load_dead_letter(cfg_reader *st, const config_setting_t *group, char **output,
                             size_t *index, char **destination);

/* output = ["a", "b", ...]: each a defined output, once; two at least. */
static int load_fanout(cfg_reader *st, const config_setting_t *list, cfg_route *route)
{
    const relay_config *cfg = st->cfg;
    int n = config_setting_length(list);
    if (n < 2)
        return cfg_fail(st, list,
                        "a route's output list names two outputs or more (fan-out); "
                        "for one, write output = \"name\"");
    route->fanout = calloc((size_t)n, sizeof *route->fanout);
    for (int i = 0; i < n; i++) {
        const char *name = config_setting_get_string_elem(list, i);
        if (!name)
            return cfg_fail(st, list, "a route's output list holds output names (strings)");
        size_t j = 0;
        while (j < cfg->output_count && strcmp(cfg->outputs[j].name, name) != 0)
            j++;
        if (j == cfg->output_count)
            return cfg_fail(st, list, "route names output \"%s\", which is not defined", name);
        for (size_t k = 0; k < route->fanout_count; k++)
            if (strcmp(route->fanout[k], name) == 0)
                return cfg_fail(st, list, "a route's output list names \"%s\" twice", name);
        route->fanout[route->fanout_count++] = strdup(name);
    }
    return 1;
}

void config_load_routes(cfg_reader *st, const config_setting_t *list)
{
    static const char *const keys[] = {
        "event_type",   "aggregate_type", "headers",     "output",      "destination", "drop",
        "drop_headers", "rename_headers", "set_headers", "dead_letter", NULL};
    relay_config *cfg = st->cfg;
    if (!list) { /* one default route: everything to the first output */
        cfg->outputs[0].routed = 1;
        cfg->routes = calloc(1, sizeof *cfg->routes);
        cfg->route_count = 1;
        cfg->routes[0] = (cfg_route){.event_type = strdup("*"),
                                     .aggregate_type = strdup("*"),
                                     .output = strdup(cfg->outputs[0].name),
                                     .destination = strdup(DEFAULT_DESTINATION)};
        return;
    }
    if (!config_setting_is_list(list) || config_setting_length(list) == 0) {
        cfg_fail(st, list, "routes must be a non-empty list of groups");
        return;
    }
    int n = config_setting_length(list);
    cfg->routes = calloc(n, sizeof *cfg->routes);
    for (int i = 0; i < n && !st->failed; i++) {
        const config_setting_t *r = config_setting_get_elem(list, i);
        cfg_route *route = &cfg->routes[cfg->route_count++];
        route->line = config_setting_source_line(r);
        if (!config_setting_is_group(r)) {
            cfg_fail(st, r, "each route must be a group { output = ...; destination = ...; }");
            return;
        }
        const config_setting_t *several = cfg_member(r, "output");
        if (several && !config_setting_is_aggregate(several))
            several = NULL;
        if (cfg_check_keys(st, r, "route", keys) < 0 ||
            cfg_get_string(st, r, "event_type", &route->event_type, 0) < 0 ||
            cfg_get_string(st, r, "aggregate_type", &route->aggregate_type, 0) < 0 ||
            (several ? load_fanout(st, several, route)
                     : cfg_get_string(st, r, "output", &route->output, 0)) < 0 ||
            cfg_get_string(st, r, "destination", &route->destination, 1) < 0)
            return;
        if (!route->event_type)
            route->event_type = strdup("*");
        if (!route->aggregate_type)
            route->aggregate_type = strdup("*");
        load_header_matches(st, cfg_member(r, "headers"), route);
        if (st->failed || load_drop(st, r, route) < 0 || route->drop)
            continue;
        if (!route->destination)
            route->destination = strdup(DEFAULT_DESTINATION);
        check_template(st, cfg_member(r, "destination"), "destination", route->destination);
        load_header_shaping(st, r, route);
        if (!several && !route->output) {
            route->output = strdup(cfg->outputs[0].name);
            if (cfg->output_count > 1)
                cfg_fail(st, r, "route needs an output (there are several)");
        }
        size_t j = 0; /* a fan-out route's outputs were checked by load_fanout */
        while (!several && j < cfg->output_count &&
               strcmp(cfg->outputs[j].name, route->output) != 0)
            j++;
        if (!several && j == cfg->output_count) {
            cfg_fail(st, cfg_member(r, "output"), "route names output \"%s\", which is not defined",
                     route->output);
            return;
        }
        route->output_index = j;
        if (!several)
            cfg->outputs[j].routed = 1;
        const config_setting_t *dead = cfg_member(r, "dead_letter");
        if (dead)
            load_dead_letter(st, dead, &route->dead_letter_output, &route->dead_letter_output_index,
                             &route->dead_letter_destination);
    }
}

/* Where dead events are also published when no destination is named. */
#define DEFAULT_DEAD_DESTINATION "outbox.dead.${aggregate_type}"

/* A dead_letter = { output; destination; } group, the global one or a
 * route's: the output it names is marked as a dead-letter output. */
static void load_dead_letter(cfg_reader *st, const config_setting_t *group, char **output,
                             size_t *index, char **destination)
{
    static const char *const keys[] = {"output", "destination", NULL};
    relay_config *cfg = st->cfg;
    if (!config_setting_is_group(group)) {
        cfg_fail(st, group, "dead_letter must be a group { output = ...; destination = ...; }");
        return;
    }
    if (cfg_check_keys(st, group, "dead_letter", keys) < 0 ||
        cfg_get_string(st, group, "output", output, 0) < 0 ||
        cfg_get_string(st, group, "destination", destination, 1) < 0)
        return;
    if (!*output) {
        cfg_fail(st, group, "dead_letter needs an output");
        return;
    }
    if (!*destination)
        *destination = strdup(DEFAULT_DEAD_DESTINATION);
    check_template(st, cfg_member(group, "destination"), "destination", *destination);
    size_t j = 0;
    while (j < cfg->output_count && strcmp(cfg->outputs[j].name, *output) != 0)
        j++;
    if (j == cfg->output_count) {
        cfg_fail(st, cfg_member(group, "output"),
                 "dead_letter names output \"%s\", which is not defined", *output);
        return;
    }
    *index = j;
    cfg->outputs[j].dead_letter = 1;
}

void config_load_dead_letter(cfg_reader *st, const config_setting_t *group)
{
    relay_config *cfg = st->cfg;
    if (group)
        load_dead_letter(st, group, &cfg->dead_letter_output, &cfg->dead_letter_output_index,
                         &cfg->dead_letter_destination);
}
