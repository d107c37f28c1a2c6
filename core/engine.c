#include "engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "db.h"
#include "host.h"
#include "log.h"
#include "metrics.h"
#include "queries.h"
#include "schema.h"
#include "state.h"
#include "wal_source.h"
#include "worker.h"

static relay_state *running;         /* for the signal handler */
static long long first_signal_ms;    /* written only by on_signal, which blocks the others */
static volatile sig_atomic_t hangup; /* SIGHUP seen, not yet logged */

/* Within this time a second signal is the same request delivered twice: GNU
 * timeout, for one, signals both its child and the child's process group. */
#define DUPLICATE_SIGNAL_MS 100

static void on_signal(int sig)
{
    if (sig == SIGHUP) { /* live reload does not exist yet: keep running, say so */
        hangup = 1;
        return;
    }
    long long now = now_ms(); /* clock_gettime is async-signal-safe */
    if (first_signal_ms == 0) {
        first_signal_ms = now;
    } else if (now - first_signal_ms >= DUPLICATE_SIGNAL_MS) {
        static const char msg[] = "second signal: exiting now; leases expire and nothing is lost\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)rc;
        _exit(130);
    }
    if (running)
        state_request_stop(running, now);
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

/* Loads each output's driver and checks its options. Exit code or 0. */
static int load_drivers(relay_state *st)
{
    const relay_config *cfg = st->cfg;
    st->drivers = calloc(cfg->output_count, sizeof *st->drivers);
    st->health = calloc(cfg->output_count, sizeof *st->health);
    for (size_t i = 0; i < cfg->output_count; i++) {
        health_init(&st->health[i], cfg->outputs[i].name);
        char err[1024];
        st->drivers[i] = host_load_output(cfg, &cfg->outputs[i], err, sizeof err);
        if (!st->drivers[i]) {
            log_error("%s", err);
            return 2;
        }
    }
    return 0;
}

static void unload_drivers(relay_state *st)
{
    for (size_t i = 0; st->drivers && i < st->cfg->output_count; i++) {
        loader_close(st->drivers[i]);
        health_destroy(&st->health[i]);
    }
    free(st->drivers);
    free(st->health);
}

/* After the deadline, what a worker still runs may take this long: the
 * statement that releases its in-flight rows is the one a stop waits for. */
#define RELEASE_GRACE_MS 500

/*
 * Waits for the workers to end. A stop must not wait for PostgreSQL: a claim
 * running when it comes is cancelled at once (no new batch starts), anything
 * still running shortly after the deadline is cancelled too (its leases
 * expire).
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
        if (hangup) {
            hangup = 0;
            log_warn("SIGHUP: live reload is not supported yet; the relay keeps running with "
                     "its current config (restart it to apply a new one)");
        }
        if (!atomic_load(&st->stop))
            continue;
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
    pthread_t cleaner;
    int cleaning = cfg->retention == RETAIN_MARK && cfg->retention_hours > 0 && !st->drain;
    if (cleaning)
        pthread_create(&cleaner, NULL, cleanup_main, st);
    join_workers(st, workers, threads);
    state_request_stop(st, now_ms());
    if (cleaning)
        pthread_join(cleaner, NULL);
    for (int i = 0; i < cfg->workers; i++)
        worker_free(workers[i]);
    free(workers);
    free(threads);
}

int engine_run(const relay_config *cfg, int drain)
{
    relay_state *st = calloc(1, sizeof *st);
    st->cfg = cfg;
    st->drain = drain;
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(st->owner_prefix, sizeof st->owner_prefix, "%s:%d:%lx", host, (int)getpid(),
             (unsigned long)(ts.tv_nsec ^ ts.tv_sec));

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
        wal_run(st); /* one thread streams the slot: workers and batches do not apply */
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
    free(st);
    return code;
}
