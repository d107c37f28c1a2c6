#include "config/config_fanout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obx/driver.h"

/* PostgreSQL's identifier limit: longer names are cut, and two targets'
 * tables could become one. */
#define NAME_MAX_BYTES 63

size_t fanout_targets(const relay_config *cfg, const char **targets)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->route_count; i++)
        for (size_t k = 0; k < cfg->routes[i].fanout_count; k++) {
            const char *name = cfg->routes[i].fanout[k];
            size_t j = 0;
            while (j < n && strcmp(targets[j], name) != 0)
                j++;
            if (j == n)
                targets[n++] = name;
        }
    return n;
}

static int names(const cfg_route *r, const char *output)
{
    for (size_t k = 0; k < r->fanout_count; k++)
        if (strcmp(r->fanout[k], output) == 0)
            return 1;
    return 0;
}

static long output_index(const relay_config *cfg, const char *name)
{
    for (size_t j = 0; j < cfg->output_count; j++)
        if (strcmp(cfg->outputs[j].name, name) == 0)
            return (long)j;
    return -1;
}

int fanout_make_target(relay_config *d, const char *source, const char *target, char *err,
                       size_t err_size)
{
    char table[256], name[256];
    snprintf(table, sizeof table, "%s_to_%s", d->table, target);
    snprintf(name, sizeof name, "%s.%s", source, target);
    if (strlen(table) > NAME_MAX_BYTES) {
        snprintf(err, err_size,
                 "%s: fan-out to output %s needs table %s, over %d bytes: shorten the output's "
                 "name",
                 d->path, target, table, NAME_MAX_BYTES);
        return -1;
    }
    free(d->table);
    d->table = strdup(table);
    free(d->source_name);
    d->source_name = strdup(name);
    d->fanout_of = strdup(source);
    /* a table of the relay's own: a plain poll outbox, its columns named so */
    d->source = SOURCE_POLL;
    free(d->partition_interval);
    d->partition_interval = NULL;
#define DEFAULT_COLUMN(col_name)                                                                   \
    free(d->col.col_name);                                                                         \
    d->col.col_name = strdup(#col_name);
    CFG_COLUMNS(DEFAULT_COLUMN)
#undef DEFAULT_COLUMN
    /* its routes: the fan-out routes naming target, to target alone (the
     * first of them an event matches is the one that copied it here) */
    size_t kept = 0;
    long at = output_index(d, target);
    for (size_t j = 0; j < d->output_count; j++)
        d->outputs[j].routed = 0;
    d->outputs[at].routed = 1;
    for (size_t i = 0; i < d->route_count; i++) {
        cfg_route *r = &d->routes[i];
        if (!names(r, target)) {
            config_free_route(r);
            continue;
        }
        for (size_t k = 0; k < r->fanout_count; k++)
            free(r->fanout[k]);
        free(r->fanout);
        r->fanout = NULL;
        r->fanout_count = 0;
        r->output = strdup(target);
        r->output_index = (size_t)at;
        d->routes[kept++] = *r;
    }
    d->route_count = kept;
    return 0;
}

int fanout_make_source(relay_config *cfg, char *err, size_t err_size)
{
    if (output_index(cfg, FANOUT_OUTPUT) >= 0) {
        snprintf(err, err_size,
                 "%s: output name \"%s\" is the relay's own (fan-out copies through it): rename "
                 "that output",
                 cfg->path, FANOUT_OUTPUT);
        return -1;
    }
    cfg->outputs = realloc(cfg->outputs, (cfg->output_count + 1) * sizeof *cfg->outputs);
    size_t at = cfg->output_count++;
    cfg_output *out = &cfg->outputs[at];
    memset(out, 0, sizeof *out);
    out->name = strdup(FANOUT_OUTPUT);
    out->driver = strdup("fanout");
    out->routed = 1;
    const char *option[][2] = {
        {"conninfo", cfg->conninfo}, {"schema", cfg->schema}, {"table", cfg->table}};
    out->option_count = sizeof option / sizeof option[0];
    out->options = calloc(out->option_count, sizeof *out->options);
    for (size_t i = 0; i < out->option_count; i++)
        out->options[i] = (cfg_value){
            .name = strdup(option[i][0]), .type = OBX_OPT_STRING, .s = strdup(option[i][1])};
    for (size_t i = 0; i < cfg->route_count; i++) {
        cfg_route *r = &cfg->routes[i];
        if (!r->fanout_count)
            continue;
        /* the copy goes as the row is: the targets shape it */
        for (size_t k = 0; k < r->shape_count; k++) {
            free(r->shape[k].name);
            free(r->shape[k].value);
        }
        free(r->shape);
        r->shape = NULL;
        r->shape_count = 0;
        char list[1024] = "";
        for (size_t k = 0; k < r->fanout_count; k++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", k ? "," : "", r->fanout[k]);
        }
        free(r->destination);
        r->destination = strdup(list);
        free(r->output);
        r->output = strdup(FANOUT_OUTPUT);
        r->output_index = at;
    }
    return 0;
}
