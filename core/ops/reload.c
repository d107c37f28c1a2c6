#include "ops/reload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/settings.h"
#include "host/host.h"

static void say_kept(const char *path)
{
    log_warn("reload: %s cannot change while the relay runs: keeping the running value "
             "(restart to apply it)",
             path);
}

static void ignore_completion(void *arg, uint64_t token, obx_status status, int code,
                              const char *detail)
{
    (void)arg, (void)token, (void)status, (void)code, (void)detail;
}

static int unchanged(const config_gen *old, const config_gen *next, size_t j)
{
    long i = gen_find_output(old, next->cfg->outputs[j].name);
    return i >= 0 && gen_same_output(old, (size_t)i, next, j);
}

/* Lets each driver judge a new or changed output once (as at start, where a
 * refused create stops the relay): create, close, destroy. */
static int try_changed_outputs(const config_gen *old, const config_gen *next, char *err,
                               size_t err_size)
{
    for (size_t j = 0; j < next->cfg->output_count; j++) {
        if (unchanged(old, next, j))
            continue;
        const cfg_output *out = &next->cfg->outputs[j];
        const obx_driver_def *def = &next->drivers[j]->def;
        host_ctx host;
        char why[512] = "";
        host_init(&host, next->drivers[j], out, ignore_completion, NULL);
        obx_instance *inst = def->create(&host.host, why, sizeof why);
        if (!inst) {
            snprintf(err, err_size, "%s:%d: output %s: driver %s refused its configuration: %s",
                     next->cfg->path, out->line, out->name, def->name,
                     why[0] ? why : "no reason given");
            return -1;
        }
        def->close(inst);
        def->destroy(inst);
    }
    return 0;
}

/* An output that stays as it was keeps its state: paused stays paused. */
static void carry_health(const config_gen *old, config_gen *next)
{
    for (size_t j = 0; j < next->cfg->output_count; j++) {
        long i = gen_find_output(old, next->cfg->outputs[j].name);
        if (i < 0 || !gen_same_output(old, (size_t)i, next, j))
            continue;
        output_health *from = &old->health[i], *to = &next->health[j];
        pthread_mutex_lock(&from->lock);
        to->down = from->down;
        to->down_since_ms = from->down_since_ms;
        to->up_at_ms = from->up_at_ms;
        to->probe_at_ms = from->probe_at_ms;
        to->backoff_ms = from->backoff_ms;
        to->outages = from->outages;
        to->proved = from->proved;
        to->ok_sent_ms = from->ok_sent_ms;
        to->refusals = from->refusals;
        pthread_mutex_unlock(&from->lock);
    }
}

/* "kept: a; new or changed: b, c; removed: d" */
static void describe(const config_gen *old, const config_gen *next, char *out, size_t cap)
{
    char kept[512] = "", changed[512] = "", removed[512] = "";
    for (size_t j = 0; j < next->cfg->output_count; j++) {
        char *list = unchanged(old, next, j) ? kept : changed;
        size_t len = strlen(list);
        snprintf(list + len, sizeof kept - len, "%s%s", len ? ", " : "",
                 next->cfg->outputs[j].name);
    }
    for (size_t i = 0; i < old->cfg->output_count; i++) {
        if (gen_find_output(next, old->cfg->outputs[i].name) >= 0)
            continue;
        size_t len = strlen(removed);
        snprintf(removed + len, sizeof removed - len, "%s%s", len ? ", " : "",
                 old->cfg->outputs[i].name);
    }
    snprintf(out, cap, "outputs kept: %s; new or changed: %s; removed: %s", kept[0] ? kept : "none",
             changed[0] ? changed : "none", removed[0] ? removed : "none");
}

int reload_config(relay_state *st, relay_config *cfg, const char *why)
{
    config_gen *old = st->gen; /* only this thread replaces it */
    char err[1024];
    snprintf(err, sizeof err, "%s", why ? why : "");
    config_gen *next = NULL;
    if (cfg) {
        /* the settings table's fixed rows (settings.c) keep their running value */
        settings_keep_fixed(cfg, st->cfg, say_kept);
        next = gen_new(cfg, 1, old->number + 1, err, sizeof err);
        if (!next)
            config_free(cfg);
    }
    if (next && try_changed_outputs(old, next, err, sizeof err) < 0) {
        gen_release(next);
        next = NULL;
    }
    if (!next) {
        log_error("reload refused: %s; the running config (generation %ld) stays", err,
                  old->number);
        return -1;
    }
    carry_health(old, next);
    char what[1600];
    describe(old, next, what, sizeof what);
    pthread_mutex_lock(&st->gen_lock);
    st->gen = next;
    atomic_store(&st->gen_number, next->number);
    pthread_mutex_unlock(&st->gen_lock);
    log_info("reload: config generation %ld applied (%zu outputs, %zu routes; %s); workers switch "
             "to it between batches",
             next->number, next->cfg->output_count, next->cfg->route_count, what);
    gen_release(old);
    return 0;
}
