#include "ops/probes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "host/source.h"
#include "ops/backlog.h"
#include "telemetry/counters.h"

/* A backlog poll older than this means the poller itself is stuck. */
#define POLL_STALE_MS (3 * BACKLOG_POLL_MS + 10000)

static char *dump(json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

static void add_reason(json_t *reasons, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_reason(json_t *reasons, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(reasons, json_string(text)); /* jansson escapes it */
}

/* A source that ended for good, and why (relay_state.fatal). */
static void fatal_reason(json_t *reasons, relay_state *st)
{
    const char *why = atomic_load(&st->fatal);
    const char *name = st->cfg->source_name;
    add_reason(reasons, "%s%s%sended: %s", name ? "source " : "", name ? name : "", name ? " " : "",
               why ? why : "(no reason given)");
}

static json_t *answer(json_t *reasons, const char *good, const char *bad)
{
    int ok = json_array_size(reasons) == 0;
    json_t *o = json_pack("{s:s}", "status", ok ? good : bad);
    if (ok)
        json_decref(reasons);
    else
        json_object_set_new(o, "reasons", reasons);
    return o;
}

int probe_health(relay_state *st, char **body)
{
    json_t *reasons = json_array();
    relay_metrics *m = st->metrics;
    if (atomic_load(&st->failed))
        fatal_reason(reasons, st);
    long long now = now_ms();
    config_gen *gen = state_take_gen(st); /* poll_interval_ms may have changed live */
    long long stale_ms = m ? counters_stale_ms(m, gen->cfg) : 0;
    gen_release(gen);
    for (int i = 0; m && i < m->beat_count; i++) {
        long long beat = atomic_load(&m->beats[i]);
        if (beat && now - beat > stale_ms) {
            char name[48];
            counters_thread_name(st->cfg, st->src->thread, i, name, sizeof name);
            add_reason(reasons, "%s%s: no progress for %lld s", name,
                       i < st->cfg->workers ? "" : " thread", (now - beat) / 1000);
        }
    }
    int ok = json_array_size(reasons) == 0;
    *body = dump(answer(reasons, "ok", "stalled"));
    return ok ? 200 : 503;
}

int probe_ready(relay_state *st, char **body)
{
    json_t *reasons = json_array();
    relay_metrics *m = st->metrics;
    if (atomic_load(&st->failed)) /* it has stopped for good: say why */
        fatal_reason(reasons, st);
    else if (atomic_load(&st->stop))
        add_reason(reasons, "stopping");
    if (!m) {
        add_reason(reasons, "database: not measured");
    } else {
        pthread_mutex_lock(&m->lock);
        backlog_snapshot b = m->backlog;
        pthread_mutex_unlock(&m->lock);
        if (!b.polled && !b.failures)
            add_reason(reasons, "database: not checked yet");
        else if (!b.db_ok)
            /* libpq's message names the server's address: the log has it,
             * an unauthenticated answer does not */
            add_reason(reasons, "database: the last check failed (the relay's log says why)");
        else if (now_ms() - b.polled_at_ms > POLL_STALE_MS)
            add_reason(reasons, "database: no successful poll for %lld s",
                       (now_ms() - b.polled_at_ms) / 1000);
    }
    for (int k = 0; k < LOCK_KINDS; k++) {
        char who[224];
        if (lock_squat_read(&st->squats, (lock_kind)k, who, sizeof who))
            add_reason(reasons, "%s lock: held by %s, not a relay (another role)",
                       lock_kind_names[k], who);
    }
    config_gen *gen = state_take_gen(st); /* the outputs of the running config */
    for (size_t i = 0; i < gen->cfg->output_count; i++) {
        int up;
        long long outages;
        health_read(&gen->health[i], &up, &outages);
        if (!up)
            add_reason(reasons, "output %s: unavailable", gen->cfg->outputs[i].name);
    }
    gen_release(gen);
    int ok = json_array_size(reasons) == 0;
    *body = dump(answer(reasons, "ready", "not ready"));
    return ok ? 200 : 503;
}
