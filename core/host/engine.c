#include "engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backlog.h"
#include "cleanup.h"
#include "db.h"
#include "log.h"
#include "metrics.h"
#include "service_notify.h"
#include "queries.h"
#include "reload.h"
#include "schema.h"
#include "relay_state.h"
#include "counters.h"
#include "wal_source.h"
#include "worker.h"

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
        rc = queries_payload_type(conn, st->cfg, type, type_size, err, sizeof err);
    if (rc == 0)
        rc = queries_prepare(conn, st->cfg, type, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        log_error("%s", err);
        return -1;
    }
    if (strcmp(type, "bytea") == 0)
        st->payload = PAYLOAD_BYTES;
    else if (strcmp(type, "json") == 0 || strcmp(type, "jsonb") == 0)
        st->payload = PAYLOAD_JSON;
    else
        st->payload = PAYLOAD_TEXT; /* text columns are checked to hold JSON */
    return 0;
}

/* Generation 0: the config as started, its drivers loaded and checked. */
static int load_drivers(relay_state *st)
{
    char err[1024];
    pthread_mutex_init(&st->gen_lock, NULL);
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

/* After the deadline, what a worker still runs may take this long: the
 * statement that releases its in-flight rows is the one a stop waits for. */
#define RELEASE_GRACE_MS 500

/*
 * Waits for the workers to end. A stop must not wait for PostgreSQL: a claim
 * running when it comes is cancelled at once (no new batch starts), anything
 * still running shortly after the deadline is cancelled too (its rows are
 * free again when its transaction ends).
 */
static void join_workers(relay_state *st, worker **workers, pthread_t *threads)
{
    const relay_config *cfg = st->cfg;
    for (int i = 0; i < cfg->workers;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_timedjoin_np(threads[i], NULL, &until) == 0) {
            i++;
            continue;
        }
        notify_watchdog(now_ms());
        if (hangup) {
            hangup = 0;
            reload(st);
        }
        if (!atomic_load(&st->stop))
            continue;
        notify_stopping();
        int past =
            now_ms() >= atomic_load(&st->stop_at_ms) + cfg->shutdown_timeout_ms + RELEASE_GRACE_MS;
        for (int k = i; k < cfg->workers; k++)
            worker_cancel(workers[k], !past);
    }
}

static void run_workers(relay_state *st, const char *payload_type)
{
    const relay_config *cfg = st->cfg;
    worker **workers = calloc(cfg->workers, sizeof *workers);
    pthread_t *threads = calloc(cfg->workers, sizeof *threads);
    for (int i = 0; i < cfg->workers; i++) {
        workers[i] = worker_new(st, i, payload_type);
        pthread_create(&threads[i], NULL, worker_main, workers[i]);
    }
    char ready[96];
    snprintf(ready, sizeof ready, "READY=1\nSTATUS=relaying: %d workers%s", cfg->workers,
             st->drain ? ", drain" : "");
    notify_send(ready);
    pthread_t cleaner;
    int cleaning = cfg->retention == RETAIN_MARK && cfg->retention_hours > 0 && !st->drain;
    if (cleaning)
        pthread_create(&cleaner, NULL, cleanup_main, st);
    pthread_t poller; /* the backlog gauges and /readyz's database check */
    int polling = cfg->metrics_listen != NULL;
    if (polling)
        pthread_create(&poller, NULL, backlog_main, st);
    join_workers(st, workers, threads);
    notify_stopping();
    state_request_stop(st, now_ms());
    if (cleaning)
        pthread_join(cleaner, NULL);
    if (polling)
        pthread_join(poller, NULL);
    for (int i = 0; i < cfg->workers; i++)
        worker_free(workers[i]);
    free(workers);
    free(threads);
}

static void *wal_main(void *arg)
{
    wal_run(arg);
    return NULL;
}

/* WAL mode: one thread streams the slot; this one serves the service
 * manager, SIGHUP and the backlog poller (/readyz's database check), as for
 * workers. Outputs and routes are fixed for the run: a reload is refused. */
static void run_wal(relay_state *st)
{
    pthread_t streamer, poller;
    pthread_create(&streamer, NULL, wal_main, st);
    notify_send("READY=1\nSTATUS=relaying from the WAL");
    int polling = st->cfg->metrics_listen != NULL;
    if (polling)
        pthread_create(&poller, NULL, backlog_main, st);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_timedjoin_np(streamer, NULL, &until) == 0)
            break;
        notify_watchdog(now_ms());
        if (hangup) {
            hangup = 0;
            log_warn("reload: not supported with relay.source = \"wal\"; the running config "
                     "stays (restart to apply a new one)");
        }
        if (atomic_load(&st->stop))
            notify_stopping();
    }
    notify_stopping();
    state_request_stop(st, now_ms());
    if (polling)
        pthread_join(poller, NULL);
}

int engine_run(const relay_config *cfg, int drain)
{
    notify_init();
    relay_state *st = calloc(1, sizeof *st);
    st->cfg = cfg;
    st->drain = drain;
    st->metrics = counters_new(cfg);

    char payload_type[64] = "";
    int code = load_drivers(st);
    if (code == 0 && preflight(st, payload_type, sizeof payload_type) < 0)
        code = 1;
    if (code == 0 && cfg->source == SOURCE_WAL && wal_preflight(cfg) < 0)
        code = 1;
    metrics_server *metrics = NULL;
    if (code == 0 && cfg->metrics_listen) {
        char err[512];
        if (!(metrics = metrics_start(st, cfg->metrics_listen, err, sizeof err))) {
            log_error("%s", err);
            code = 1;
        }
    }
    if (code != 0) {
        unload_drivers(st);
        counters_free(st->metrics);
        free(st);
        return code;
    }
    running = st;
    install_signals();
    if (cfg->source == SOURCE_WAL)
        log_info("relay starting: source wal (slot %s, publication %s), ordering %s, %zu outputs%s",
                 cfg->wal_slot, cfg->wal_publication,
                 cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none", cfg->output_count,
                 drain ? ", drain" : "");
    else
        log_info("relay starting: %d workers, batch %d, ordering %s, %zu outputs%s", cfg->workers,
                 cfg->batch_size, cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none",
                 cfg->output_count, drain ? ", drain" : "");
    if (cfg->source == SOURCE_WAL)
        run_wal(st); /* one thread streams the slot: workers and batches do not apply */
    else
        run_workers(st, payload_type);
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
