#include "host/outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define PROBE_TIMEOUT_MS 1000

void outputs_init(outputs *o, relay_state *st, int worker_index, host_complete_fn on_complete,
                  host_refuse_fn on_refuse, void *arg)
{
    o->st = st;
    o->gen = state_take_gen(st);
    o->count = o->gen->cfg->output_count;
    o->out = calloc(o->count, sizeof *o->out);
    o->on_complete = on_complete;
    o->on_refuse = on_refuse;
    o->arg = arg;
    o->only = OUTPUTS_ROUTED;
    snprintf(o->scope, sizeof o->scope, "worker %d", worker_index);
}

void outputs_free(outputs *o)
{
    outputs_close_all(o);
    free(o->out);
    o->out = NULL;
    gen_release(o->gen);
    o->gen = NULL;
}

void outputs_close(outputs *o, size_t i)
{
    output_instance *oi = &o->out[i];
    if (oi->inst) {
        const obx_driver_def *def = &oi->host->driver->def;
        atomic_store(&oi->host->closing, 1);
        def->close(oi->inst); /* completes what is still in flight, as aborted */
        def->destroy(oi->inst);
        oi->inst = NULL;
    }
    free(oi->host);
    oi->host = NULL;
    oi->stalled_since_ms = 0;
    gen_release(oi->born);
    oi->born = NULL;
}

void outputs_close_all(outputs *o)
{
    for (size_t i = 0; i < o->count; i++)
        outputs_close(o, i);
}

void outputs_close_broken(outputs *o)
{
    for (size_t i = 0; i < o->count; i++)
        if (atomic_load(&o->out[i].broken) && o->out[i].inst)
            outputs_close(o, i);
}

void outputs_stall(outputs *o, size_t i)
{
    if (!o->out[i].stalled_since_ms)
        o->out[i].stalled_since_ms = now_ms();
}

/* Is output i's instance stalled still? It no longer is once it owes nothing. */
static int still_stalled(outputs *o, size_t i)
{
    output_instance *oi = &o->out[i];
    if (!oi->stalled_since_ms)
        return 0;
    long owed = oi->host ? atomic_load(&oi->host->owed) : 0;
    if (owed > 0)
        return 1;
    oi->stalled_since_ms = 0;
    log_scoped(OBX_LOG_INFO, o->scope, "output %s: its driver answered every message it held",
               o->gen->cfg->outputs[i].name);
    return 0;
}

/* A stalled instance that still owes after 5 leases is re-created: closing
 * completes what it holds (late: ignored) and a new one owes nothing. */
static void recreate_if_stuck(outputs *o, size_t i)
{
    output_instance *oi = &o->out[i];
    long long stuck_after = 5LL * o->gen->cfg->lease_ms;
    if (!still_stalled(o, i) || now_ms() - oi->stalled_since_ms <= stuck_after)
        return;
    log_scoped(OBX_LOG_ERROR, o->scope,
               "output %s: driver still holds %ld messages %lld ms after they were given back: "
               "re-creating it",
               o->gen->cfg->outputs[i].name, atomic_load(&oi->host->owed), stuck_after);
    atomic_store(&oi->broken, 1);
}

/* Does this user of the outputs need an instance of output i of cfg? An
 * output only dead_letter groups name is the dead-letter thread's alone. */
static int wanted_in(const outputs *o, const relay_config *cfg, size_t i)
{
    if (o->only == OUTPUTS_DEAD_LETTER)
        return cfg->outputs[i].dead_letter;
    return o->only >= 0 ? i == (size_t)o->only : cfg->outputs[i].routed;
}

static int wanted(const outputs *o, size_t i)
{
    return wanted_in(o, o->gen->cfg, i);
}

int outputs_ensure(outputs *o, int first)
{
    const relay_config *cfg = o->gen->cfg;
    int all_up = 1;
    for (size_t i = 0; i < o->count; i++) {
        output_instance *oi = &o->out[i];
        if (!wanted(o, i))
            continue;
        recreate_if_stuck(o, i);
        if (atomic_load(&oi->broken)) {
            outputs_close(o, i);
            atomic_store(&oi->broken, 0);
            oi->failed = 1;
            oi->backoff_ms = oi->backoff_ms ? oi->backoff_ms * 2 : 200;
            if (oi->backoff_ms > 30000)
                oi->backoff_ms = 30000;
            oi->retry_at = now_ms() + oi->backoff_ms;
            log_scoped(OBX_LOG_WARN, o->scope,
                       "output %s: driver instance failed; re-creating in %d ms",
                       cfg->outputs[i].name, oi->backoff_ms);
        }
        if (oi->inst)
            continue;
        if (now_ms() < oi->retry_at) {
            all_up = 0;
            continue;
        }
        char err[512] = "";
        const loaded_driver *drv = o->gen->drivers[i];
        outputs_close(o, i); /* a failed create's host and generation */
        oi->host = calloc(1, sizeof *oi->host);
        host_init(oi->host, drv, &cfg->outputs[i], o->on_complete, o->arg);
        oi->host->on_refuse = o->on_refuse;
        oi->born = o->gen;
        gen_hold(oi->born);
        oi->inst = drv->def.create(&oi->host->host, err, sizeof err);
        if (!oi->inst) {
            log_scoped(OBX_LOG_ERROR, o->scope, "output %s (%s): cannot create: %s",
                       cfg->outputs[i].name, drv->def.name, err[0] ? err : "no reason given");
            if (first)
                return -1;
            atomic_store(&oi->broken, 1);
            all_up = 0;
        } else if (!first) {
            /* not failed: the output is new to this worker (a reload) */
            log_scoped(OBX_LOG_INFO, o->scope, "output %s: driver instance %s",
                       cfg->outputs[i].name, oi->failed ? "re-created" : "created");
            oi->failed = 0;
        }
    }
    return all_up ? 0 : 1;
}

/* Paused by an operator: nothing is sent to it, and it is not probed. */
static int operator_paused(outputs *o, size_t i)
{
    return pauses_output(&o->st->pauses, o->gen->cfg->outputs[i].name);
}

int outputs_any_usable(outputs *o)
{
    int usable = 0;
    for (size_t i = 0; i < o->count; i++) {
        output_health *h = &o->gen->health[i];
        output_instance *oi = &o->out[i];
        if (!wanted(o, i) || operator_paused(o, i))
            continue;
        if (still_stalled(o, i))
            continue; /* neither usable nor probed: it has not answered what it holds */
        if (!health_is_down(h)) {
            usable = 1;
            continue;
        }
        obx_status (*probe)(obx_instance *, int) = oi->inst ? oi->host->driver->def.probe : NULL;
        if (!probe) {
            usable |= health_wait_ms(h) == 0; /* the next batch is the probe */
            continue;
        }
        if (!health_take_probe(h))
            continue;
        obx_status rc = probe(oi->inst, PROBE_TIMEOUT_MS);
        if (rc == OBX_OK) {
            health_up(h, 0);
            usable = 1;
        } else {
            health_down(h, "probe: still unavailable");
        }
    }
    return usable;
}

int outputs_may_send(outputs *o, size_t i)
{
    output_health *h = &o->gen->health[i];
    if (!o->out[i].inst || atomic_load(&o->out[i].broken) || operator_paused(o, i) ||
        still_stalled(o, i))
        return 0;
    if (!health_is_down(h))
        return 1;
    return !o->out[i].host->driver->def.probe && health_take_probe(h);
}

int outputs_poll(outputs *o, int timeout_ms)
{
    size_t polling = 0;
    for (size_t i = 0; i < o->count; i++)
        polling += o->out[i].inst && o->out[i].host->driver->def.poll;
    if (polling == 0)
        return 0;
    int slice = timeout_ms / (int)polling;
    for (size_t i = 0; i < o->count; i++)
        if (o->out[i].inst && o->out[i].host->driver->def.poll)
            o->out[i].host->driver->def.poll(o->out[i].inst, timeout_ms ? (slice ? slice : 1) : 0);
    return 1;
}

output_health *outputs_health(outputs *o, size_t i)
{
    return &o->gen->health[i];
}

int outputs_switch(outputs *o)
{
    if (atomic_load(&o->st->gen_number) == o->gen->number)
        return 0;
    config_gen *next = state_take_gen(o->st);
    size_t count = next->cfg->output_count, kept = 0, closed = 0;
    output_instance *out = calloc(count, sizeof *out);
    for (size_t j = 0; j < count; j++) {
        long i = gen_find_output(o->gen, next->cfg->outputs[j].name);
        if (i < 0 || !o->out[i].inst || !gen_same_output(o->gen, (size_t)i, next, j) ||
            (o->only < 0 && !wanted_in(o, next->cfg, j)))
            continue;       /* not the same, or the new config does not name it so: closed */
        out[j] = o->out[i]; /* same output: the instance, its host and backoff carry over */
        memset(&o->out[i], 0, sizeof o->out[i]);
        kept++;
    }
    for (size_t i = 0; i < o->count; i++) {
        closed += o->out[i].inst != NULL;
        outputs_close(o, i); /* nothing is in flight between batches */
    }
    free(o->out);
    o->out = out;
    o->count = count;
    gen_release(o->gen);
    o->gen = next;
    log_scoped(OBX_LOG_INFO, o->scope,
               "switched to config generation %ld: %zu driver instances kept, %zu closed",
               next->number, kept, closed);
    return 1;
}

void outputs_succeeded(outputs *o, size_t i)
{
    o->out[i].backoff_ms = 0;
    health_up(&o->gen->health[i], 1);
}

long long outputs_pause_ms(outputs *o, size_t i)
{
    return operator_paused(o, i) ? PAUSED_DEFER_MS : health_wait_ms(&o->gen->health[i]);
}

long long outputs_wait_ms(outputs *o)
{
    long long wait = 0;
    for (size_t i = 0; i < o->count; i++) {
        /* a paused output is looked at again within a second: resume is quick */
        long long w = operator_paused(o, i) ? 1000 : health_wait_ms(&o->gen->health[i]);
        if (w > 0 && (wait == 0 || w < wait))
            wait = w;
    }
    return wait;
}
