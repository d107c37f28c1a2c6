#include "host/generation.h"

#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "obx/driver.h"

/* Runs of one aggregate are claimed only with ordering on and one output
 * the routes name, which keeps order: across outputs, a batch's order is
 * not kept; nor where the output says one_per_aggregate (a destination that
 * may refuse an event and take the next, already sent). An output only
 * dead_letter names is not the workers'. */
static int run_length_of(const config_gen *g)
{
    const relay_config *cfg = g->cfg;
    size_t routed = 0, only = 0;
    for (size_t i = 0; i < cfg->output_count; i++)
        if (cfg->outputs[i].routed) {
            routed++;
            only = i;
        }
    if (cfg->ordering != ORDERING_AGGREGATE || routed != 1 ||
        !(g->drivers[only]->def.flags & OBX_DRIVER_IN_ORDER) ||
        cfg->outputs[only].one_per_aggregate)
        return 1;
    return cfg->batch_size;
}

static void gen_free(config_gen *g)
{
    for (size_t i = 0; i < g->cfg->output_count; i++) {
        if (g->drivers[i])
            loader_close(g->drivers[i]);
        health_destroy(&g->health[i]);
    }
    free(g->drivers);
    free(g->health);
    if (g->owns_cfg)
        config_free(g->cfg);
    free(g);
}

config_gen *gen_new(relay_config *cfg, int owns_cfg, long number, char *err, size_t err_size)
{
    config_gen *g = calloc(1, sizeof *g);
    g->number = number;
    g->cfg = cfg;
    g->drivers = calloc(cfg->output_count, sizeof *g->drivers);
    g->health = calloc(cfg->output_count, sizeof *g->health);
    atomic_init(&g->users, 1);
    for (size_t i = 0; i < cfg->output_count; i++)
        health_init(&g->health[i], cfg->outputs[i].name);
    for (size_t i = 0; i < cfg->output_count; i++) {
        g->drivers[i] = host_load_output(cfg, &cfg->outputs[i], err, err_size);
        if (!g->drivers[i]) {
            gen_free(g); /* does not own cfg yet */
            return NULL;
        }
    }
    g->run_length = run_length_of(g);
    g->owns_cfg = owns_cfg;
    return g;
}

void gen_hold(config_gen *g)
{
    atomic_fetch_add(&g->users, 1);
}

void gen_release(config_gen *g)
{
    if (g && atomic_fetch_sub(&g->users, 1) == 1)
        gen_free(g);
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_value(const cfg_value *a, const cfg_value *b)
{
    return same_text(a->name, b->name) && a->type == b->type && same_text(a->s, b->s) &&
           a->i == b->i && a->b == b->b && a->d == b->d;
}

int gen_same_output(const config_gen *a, size_t i, const config_gen *b, size_t j)
{
    const cfg_output *x = &a->cfg->outputs[i], *y = &b->cfg->outputs[j];
    if (strcmp(x->name, y->name) != 0 || strcmp(x->driver, y->driver) != 0 ||
        strcmp(a->drivers[i]->path, b->drivers[j]->path) != 0 ||
        x->option_count != y->option_count || x->property_count != y->property_count)
        return 0;
    for (size_t k = 0; k < x->option_count; k++)
        if (!same_value(&x->options[k], &y->options[k]))
            return 0;
    for (size_t k = 0; k < x->property_count; k++)
        if (strcmp(x->properties[k].key, y->properties[k].key) != 0 ||
            strcmp(x->properties[k].value, y->properties[k].value) != 0)
            return 0;
    return 1;
}

long gen_find_output(const config_gen *g, const char *name)
{
    for (size_t i = 0; i < g->cfg->output_count; i++)
        if (strcmp(g->cfg->outputs[i].name, name) == 0)
            return (long)i;
    return -1;
}
