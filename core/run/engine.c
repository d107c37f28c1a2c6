#include "run/engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/service_notify.h"
#include "host/source_set.h"
#include "ops/admin.h"
#include "ops/metrics.h"
#include "ops/reload.h"
#include "run/outbox_run.h"
#include "telemetry/counters.h"
#include "telemetry/tracing.h"

static atomic_llong stop_signal_ms;  /* a stop's time (a signal's, or a source's fatal end's), for
                                      * the engine's thread to pass on */
static long long first_signal_ms;    /* written only by on_signal, which blocks the others */
static volatile sig_atomic_t hangup; /* SIGHUP seen, the reload not yet done */

/* Within this time a second signal is the same request delivered twice: GNU
 * timeout, for one, signals both its child and the child's process group. */
#define DUPLICATE_SIGNAL_MS 100

static void on_signal(int sig)
{
    if (sig == SIGHUP) { /* the engine's thread reloads */
        hangup = 1;
        return;
    }
    long long now = now_ms(); /* clock_gettime is async-signal-safe */
    if (first_signal_ms == 0) {
        first_signal_ms = now;
    } else if (now - first_signal_ms >= DUPLICATE_SIGNAL_MS) {
        static const char msg[] =
            "second signal: exiting now; nothing is lost (what was in flight is published again)\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)rc;
        _exit(130);
    }
    long long none = 0;
    atomic_compare_exchange_strong(&stop_signal_ms, &none, now);
}

/* STOPPING=1 once, when the stop is first seen (or the workers ended). */
static void notify_stopping(void)
{
    static int sent;
    if (!sent)
        notify_send("STOPPING=1\nSTATUS=stopping: finishing what is in flight");
    sent = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGHUP);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The process's runs, in the config's order (ended ones kept for the exit code). */
typedef struct engine {
    outbox_run **runs;
    size_t count, cap;
    source_set set;
    const char *path;
} engine;

static void engine_add(engine *e, outbox_run *r)
{
    if (e->count == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 8;
        e->runs = realloc(e->runs, e->cap * sizeof *e->runs);
    }
    e->runs[e->count++] = r;
    source_set_add(&e->set, r->st);
}

/* A source whose database cannot be reached at start is tried again this often. */
#define START_RETRY_MS 5000

/* A starter has ended (run_start_poll's rc): a failed start is tried again. */
static void started(outbox_run *r, int rc)
{
    if (rc >= 0)
        return;
    r->retry_at_ms = now_ms() + START_RETRY_MS;
    speak_for(r);
    log_warn("not started: trying again in %d s; the other sources run meanwhile",
             START_RETRY_MS / 1000);
    speak_for(NULL);
}

/* SIGHUP with sources: each running one takes its new generation (reload.c),
 * one no longer listed stops, one newly listed starts. */
static int reload_sources(engine *e)
{
    char err[1024];
    size_t n;
    relay_config **cfgs = config_load_all(e->path, &n, err, sizeof err);
    if (!cfgs) {
        log_error("reload refused: %s; the running sources stay as they are", err);
        return -1;
    }
    if (!cfgs[0]->source_name) {
        log_error("reload refused: %s no longer lists sources or fan-out routes; restart to "
                  "relay its one outbox",
                  e->path);
        config_free_all(cfgs, n);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < e->count; i++) {
        outbox_run *r = e->runs[i];
        size_t k = 0;
        while (k < n && (!cfgs[k] || strcmp(cfgs[k]->source_name, r->st->cfg->source_name) != 0))
            k++; /* NULL: taken by the run of that name */
        if (r->ended || atomic_load(&r->st->stop))
            continue;
        speak_for(r);
        if (k == n) {
            log_info("reload: no longer listed: stopping this source");
            state_request_stop(r->st, now_ms());
        } else if (reload_config(r->st, cfgs[k], NULL) < 0) {
            rc = -1;
        }
        if (k < n)
            cfgs[k] = NULL; /* taken */
        speak_for(NULL);
    }
    for (size_t k = 0; k < n; k++) { /* the rest run nowhere yet */
        relay_config *cfg = cfgs[k];
        if (!cfg)
            continue;
        cfgs[k] = NULL;
        log_info("reload: source %s is new: starting it", cfg->source_name);
        outbox_run *r = run_new(cfg, 0);
        if (!r) {
            rc = -1;
            continue;
        }
        engine_add(e, r); /* the next tick starts it */
    }
    config_free_all(cfgs, 0);
    return rc;
}

/* SIGHUP with one outbox: its new generation (reload.c), unless the file now
 * lists sources or fan-out routes (new sources: a restart starts them). */
static int reload_one(engine *e)
{
    char err[1024];
    size_t n = 0;
    relay_config **cfgs = config_load_all(e->path, &n, err, sizeof err);
    if (cfgs && (n > 1 || cfgs[0]->source_name)) {
        log_error("reload refused: %s now lists sources or fan-out routes; restart to relay them",
                  e->path);
        config_free_all(cfgs, n);
        return -1;
    }
    relay_config *cfg = cfgs ? cfgs[0] : NULL;
    free(cfgs);
    return reload_config(e->runs[0]->st, cfg, err);
}

/* SIGHUP: a new config generation, unless stopping; systemd hears
 * RELOADING=1 then READY=1 either way. */
static void reload(engine *e)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char msg[96];
    snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%lld",
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    notify_send(msg);
    log_info("reload: reading %s", e->path);
    int rc = e->set.labelled ? reload_sources(e) : reload_one(e);
    long number = e->set.labelled ? 0 : atomic_load(&e->runs[0]->st->gen_number);
    if (e->set.labelled)
        snprintf(msg, sizeof msg, "READY=1\nSTATUS=relaying%s",
                 rc < 0 ? " (the last reload was refused, in part)" : "");
    else
        snprintf(msg, sizeof msg, "READY=1\nSTATUS=relaying: config generation %ld%s", number,
                 rc < 0 ? " (the last reload was refused)" : "");
    notify_send(msg);
}

/* --drain: a fan-out target may find its table empty while its source still
 * copies into it, so it drains only once its source has ended. */
static void drain_targets(engine *e, const outbox_run *source)
{
    const char *name = source->st->cfg->source_name;
    for (size_t i = 0; name && i < e->count; i++) {
        outbox_run *t = e->runs[i];
        if (t->drain_later && strcmp(t->st->cfg->fanout_of, name) == 0)
            atomic_store(&t->st->drain, 1);
    }
}

/* r ended for good (relay_state.fatal says why). With several sources the
 * process stops as on SIGTERM: the others finish what they have in flight,
 * then it exits 1 and the service manager restarts it (docs/sources.md),
 * rather than relay on with one outbox silently left behind (issue 54). r
 * stays in the set meanwhile: /readyz names it and why, and its series stay,
 * with outbox_relay_source_up 0. One outbox: the process ends with it. */
static void ended_for_good(engine *e, const outbox_run *r)
{
    if (!e->set.labelled)
        return;
    const char *why = atomic_load(&r->st->fatal);
    speak_for(r);
    log_error("source %s ended: %s; stopping the other sources, then exiting 1",
              r->st->cfg->source_name, why ? why : "(no reason given)");
    speak_for(NULL);
    long long none = 0;
    atomic_compare_exchange_strong(&stop_signal_ms, &none, now_ms());
}

/* After the deadline, what a source still runs may take this long: the
 * statement that releases its in-flight rows is the one a stop waits for. */
#define RELEASE_GRACE_MS 500
/* How often the engine's thread looks at the runs, signals and the watchdog. */
#define TICK_MS 50

/* One look at every run: ended threads are joined, a stop is passed on (and
 * its deadline), a source waiting for its database is tried again. Returns
 * how many runs are still live. */
static size_t tick(engine *e)
{
    size_t live = 0;
    long long signalled = atomic_load(&stop_signal_ms);
    int stalled = 0;
    for (size_t i = 0; i < e->count; i++) {
        outbox_run *r = e->runs[i];
        relay_state *st = r->st;
        if (r->ended)
            continue;
        if (signalled)
            state_request_stop(st, signalled);
        if (r->starting || atomic_load(&r->start_rc)) {
            started(r, run_start_poll(r)); /* r->run is the starter's until it ends */
        } else if (!r->run) {
            if (atomic_load(&st->stop))
                r->ended = 1;
            else if (now_ms() >= r->retry_at_ms)
                run_start_async(r);
        } else if (r->src->join(r->run, 0)) {
            run_end(r);
            drain_targets(e, r);
            if (atomic_load(&st->failed))
                ended_for_good(e, r);
        } else {
            config_gen *gen = state_take_gen(st);
            stalled |= counters_stalled(st->metrics, gen->cfg, now_ms());
            gen_release(gen);
            if (atomic_load(&st->stop)) {
                if (signalled || !e->set.labelled) /* not a source a reload removed */
                    notify_stopping();
                if (r->src->stopping)
                    r->src->stopping(r->run, now_ms() >= atomic_load(&st->stop_at_ms) +
                                                             st->cfg->shutdown_timeout_ms +
                                                             RELEASE_GRACE_MS);
            }
        }
        if (r->ended && !atomic_load(&st->failed)) /* a failed one stays: see ended_for_good */
            source_set_remove(&e->set, st);
        else
            live++;
    }
    if (!stalled) /* a stuck thread lets the service manager's watchdog restart us */
        notify_watchdog(now_ms());
    return live;
}

/* Serves the service manager, SIGHUP and stops until every run has ended. */
static void run_all(engine *e)
{
    while (tick(e) > 0) {
        if (hangup) {
            hangup = 0;
            if (!atomic_load(&stop_signal_ms))
                reload(e);
        }
        struct timespec pause = {0, TICK_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    notify_stopping();
}

/* The process-wide endpoints: metrics, tracing, admin (top: the file's top
 * level, which every source shares). */
typedef struct endpoints {
    metrics_server *metrics;
    admin_server *admin;
} endpoints;

static int endpoints_start(endpoints *ep, engine *e, const relay_config *top)
{
    char err[512];
    if (top->metrics_listen &&
        !(ep->metrics = metrics_start(&e->set, top->metrics_listen, err, sizeof err))) {
        log_error("%s", err);
        return 1;
    }
    if (tracing_start(top, err, sizeof err) < 0) {
        log_error("%s", err);
        return 1;
    }
    if (top->admin_listen && !(ep->admin = admin_start(top, err, sizeof err))) {
        log_error("%s", err);
        return 2;
    }
    return 0;
}

static void endpoints_stop(endpoints *ep)
{
    tracing_stop(); /* the workers have ended: their spans are all queued */
    admin_stop(ep->admin);
    metrics_stop(ep->metrics);
}

int engine_run(relay_config **cfgs, size_t count, int drain)
{
    notify_init();
    engine e = {0};
    source_set_init(&e.set, cfgs[0]->source_name != NULL);
    char *path = strdup(cfgs[0]->path); /* the runs' configs may go at a reload */
    e.path = path;
    int code = 0;
    for (size_t i = 0; i < count; i++) {
        outbox_run *r = NULL;
        if (code)
            config_free(cfgs[i]);
        else if (!(r = run_new(cfgs[i], drain && !cfgs[i]->fanout_of))) /* it freed cfgs[i] */
            code = 2;
        else
            engine_add(&e, r);
        if (r)
            r->drain_later = drain && r->st->cfg->fanout_of;
    }
    free(cfgs);
    /* one outbox: a database it cannot use stops the start, as a config error
     * would; with sources, that one waits while the others run */
    /* the endpoints first: tracing must run before a worker sends a span */
    endpoints ep = {0};
    if (code == 0)
        code = endpoints_start(&ep, &e, e.runs[0]->st->cfg);
    if (code == 0 && !e.set.labelled && run_start(e.runs[0]) < 0)
        code = 1;  /* with sources, the first ticks start each on its own thread */
    if (code != 0) /* what started stops at once */
        atomic_store(&stop_signal_ms, now_ms());
    else
        install_signals();
    run_all(&e);
    endpoints_stop(&ep);
    for (size_t i = 0; i < e.count; i++) {
        if (code == 0 && atomic_load(&e.runs[i]->st->failed))
            code = 1;
        run_free(e.runs[i]);
    }
    free(e.runs);
    source_set_destroy(&e.set);
    free(path);
    return code;
}
