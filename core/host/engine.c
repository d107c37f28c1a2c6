#include "engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "backlog.h"
#include "db.h"
#include "dead_forward.h"
#include "log.h"
#include "metrics.h"
#include "service_notify.h"
#include "queries.h"
#include "reload.h"
#include "schema.h"
#include "relay_state.h"
#include "counters.h"
#include "source.h"
#include "tracing.h"

static relay_state *running;         /* for the signal handler */
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
    if (running)
        state_request_stop(running, now);
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

/* Checks what `run` needs before any worker starts: the database, the
 * schema, and the payload column's type (written to type). */
static int preflight(relay_state *st, char *type, size_t type_size)
{
    char err[1024];
    PGconn *conn = db_connect(st->cfg, "outbox-relay", err, sizeof err);
    if (!conn) {
        log_error("%s", err);
        return -1;
    }
    int rc = schema_check(conn, st->cfg, err, sizeof err);
    if (rc == 0)
        rc = schema_payload_type(conn, st->cfg, type, type_size, err, sizeof err);
    if (rc == 0)
        rc = queries_prepare(conn, st->cfg, type, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        log_error("%s", err);
        return -1;
    }
    st->payload = payload_kind_of(type);
    return 0;
}

/* Generation 0: the config as started, its drivers loaded and checked. */
static int load_drivers(relay_state *st)
{
    char err[1024];
    pthread_mutex_init(&st->gen_lock, NULL);
    pauses_init(&st->pauses);
    st->gen = gen_new((relay_config *)st->cfg, 0, 0, err, sizeof err);
    if (!st->gen) {
        log_error("%s", err);
        return 2;
    }
    return 0;
}

static void unload_drivers(relay_state *st)
{
    gen_release(st->gen); /* the last user: workers have let go */
    st->gen = NULL;
    pthread_mutex_destroy(&st->gen_lock);
    pauses_destroy(&st->pauses);
}

/* SIGHUP: a new config generation, unless stopping; systemd hears
 * RELOADING=1 then READY=1 either way. */
static void reload(relay_state *st)
{
    if (atomic_load(&st->stop))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char msg[96];
    snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%lld",
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    notify_send(msg);
    int rc = reload_config(st);
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=relaying: config generation %ld%s",
             atomic_load(&st->gen_number), rc < 0 ? " (the last reload was refused)" : "");
    notify_send(msg);
}

/* After the deadline, what a source still runs may take this long: the
 * statement that releases its in-flight rows is the one a stop waits for. */
#define RELEASE_GRACE_MS 500

/* Runs the source until its threads end; this thread serves the service
 * manager, SIGHUP (a new config generation, which the source takes between
 * rounds) and the stop's deadline, and the backlog poller runs beside
 * (/readyz's database check and the backlog gauges). */
static void run_source(relay_state *st, const source_ops *src, const char *payload_type)
{
    void *run = src->start(st, payload_type);
    pthread_t poller;
    pthread_create(&poller, NULL, backlog_main, st); /* operator pauses, and metrics' backlog */
    pthread_t forwarder;
    int dead_letters = 0; /* a dead_letter group, the global one or a route's, names an output */
    for (size_t i = 0; i < st->cfg->output_count; i++)
        dead_letters |= st->cfg->outputs[i].dead_letter;
    int forwarding = dead_letters && pthread_create(&forwarder, NULL, dead_forward_main, st) == 0;
    if (dead_letters && !forwarding)
        log_error("dead-letter output: cannot start its thread; dead events stay in the database");
    while (!src->join(run, 50)) {
        config_gen *gen = state_take_gen(st);
        int stalled = counters_stalled(st->metrics, gen->cfg, now_ms());
        gen_release(gen);
        if (!stalled) /* a stuck thread lets the service manager's watchdog restart us */
            notify_watchdog(now_ms());
        if (hangup) {
            hangup = 0;
            reload(st);
        }
        if (!atomic_load(&st->stop))
            continue;
        notify_stopping();
        if (src->stopping)
            src->stopping(run, now_ms() >= atomic_load(&st->stop_at_ms) +
                                               st->cfg->shutdown_timeout_ms + RELEASE_GRACE_MS);
    }
    notify_stopping();
    state_request_stop(st, now_ms());
    pthread_join(poller, NULL);
    if (forwarding)
        pthread_join(forwarder, NULL);
    src->finish(run);
}

int engine_run(const relay_config *cfg, int drain)
{
    notify_init();
    relay_state *st = calloc(1, sizeof *st);
    st->cfg = cfg;
    st->drain = drain;
    st->metrics = counters_new(cfg);

    const source_ops *src = source_for(cfg);
    char payload_type[64] = "";
    int code = load_drivers(st);
    if (code == 0 && preflight(st, payload_type, sizeof payload_type) < 0)
        code = 1;
    if (code == 0 && src->preflight && src->preflight(cfg) < 0)
        code = 1;
    metrics_server *metrics = NULL;
    if (code == 0 && cfg->metrics_listen) {
        char err[512];
        if (!(metrics = metrics_start(st, cfg->metrics_listen, err, sizeof err))) {
            log_error("%s", err);
            code = 1;
        }
    }
    if (code == 0) {
        char err[512];
        if (tracing_start(cfg, err, sizeof err) < 0) {
            log_error("%s", err);
            code = 1;
        }
    }
    admin_server *admin = NULL;
    if (code == 0 && cfg->admin_listen) {
        char err[512];
        if (!(admin = admin_start(cfg, err, sizeof err))) {
            log_error("%s", err);
            code = 2;
        }
    }
    if (code != 0) {
        tracing_stop();
        metrics_stop(metrics);
        unload_drivers(st);
        counters_free(st->metrics);
        free(st);
        return code;
    }
    running = st;
    install_signals();
    char line[256];
    src->describe(cfg, drain, line, sizeof line);
    log_info("relay starting: %s", line);
    run_source(st, src, payload_type);
    tracing_stop(); /* the workers have ended: their spans are all queued */
    admin_stop(admin);
    metrics_stop(metrics);
    running = NULL;
    const relay_stats *s = &st->stats;
    log_info("relay stopped: claimed %lld, published %lld, retried %lld, dead %lld, released %lld, "
             "deferred %lld",
             atomic_load(&s->claimed), atomic_load(&s->published), atomic_load(&s->retried),
             atomic_load(&s->dead), atomic_load(&s->released), atomic_load(&s->deferred));
    code = atomic_load(&st->failed) ? 1 : 0;
    unload_drivers(st);
    counters_free(st->metrics);
    free(st);
    return code;
}
