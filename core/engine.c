#include "engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "host.h"
#include "log.h"
#include "metrics.h"
#include "queries.h"
#include "schema.h"
#include "sql.h"
#include "worker.h"

static engine *running; /* for the signal handler */
static long long first_signal_ms; /* written only by on_signal, which blocks both signals */

long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void engine_request_stop(void)
{
    if (running && atomic_exchange(&running->stop, 1) == 0)
        atomic_store(&running->stop_at_ms, now_ms());
}

/* Within this time a second signal is the same request delivered twice: GNU
 * timeout, for one, signals both its child and the child's process group. */
#define DUPLICATE_SIGNAL_MS 100

static void on_signal(int sig)
{
    (void)sig;
    long long now = now_ms(); /* clock_gettime is async-signal-safe */
    if (first_signal_ms == 0) {
        first_signal_ms = now;
    } else if (now - first_signal_ms >= DUPLICATE_SIGNAL_MS) {
        static const char msg[] = "second signal: exiting now; leases expire and nothing is lost\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)rc;
        _exit(130);
    }
    engine_request_stop();
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Deletes published rows past the retention horizon, in small batches, so
 * it never holds locks the claim would wait on. */
static void *cleanup_main(void *arg)
{
    engine *eng = arg;
    const relay_config *cfg = eng->cfg;
    char hours[16];
    snprintf(hours, sizeof hours, "%d", cfg->retention_hours);
    char *sql = sql_render(cfg, "DELETE FROM {table} WHERE {c.id} IN (SELECT {c.id} FROM {table}"
                                " WHERE {c.published_at} < now() - $1 * interval '1 hour'"
                                " LIMIT 1000 FOR UPDATE SKIP LOCKED)");
    PGconn *conn = NULL;
    long long next = now_ms() + 5000;
    while (!atomic_load(&eng->stop)) {
        usleep(100000);
        if (now_ms() < next)
            continue;
        next = now_ms() + 60000;
        char err[512];
        if (!conn && !(conn = db_connect(cfg, "outbox-relay cleanup", err, sizeof err))) {
            log_warn("cleanup: %s", err);
            continue;
        }
        long long total = 0;
        for (int deleted = 1000; deleted >= 1000 && !atomic_load(&eng->stop);) {
            const char *params[] = {hours};
            PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                db_error(conn, res, err, sizeof err);
                log_warn("cleanup: %s", err);
                PQclear(res);
                PQfinish(conn);
                conn = NULL;
                break;
            }
            deleted = atoi(PQcmdTuples(res));
            total += deleted;
            PQclear(res);
        }
        if (total > 0)
            log_info("cleanup: deleted %lld published rows older than %d hours", total,
                     cfg->retention_hours);
    }
    PQfinish(conn);
    free(sql);
    return NULL;
}

/* Checks what `run` needs before any worker starts: the database, the
 * schema, and the payload column's type. */
static int preflight(engine *eng)
{
    char err[1024], type[64];
    PGconn *conn = db_connect(eng->cfg, "outbox-relay", err, sizeof err);
    if (!conn) {
        log_error("%s", err);
        return -1;
    }
    int rc = schema_check(conn, eng->cfg, err, sizeof err);
    if (rc == 0)
        rc = queries_payload_type(conn, eng->cfg, type, sizeof type, err, sizeof err);
    if (rc == 0)
        rc = queries_prepare(conn, eng->cfg, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        log_error("%s", err);
        return -1;
    }
    if (strcmp(type, "bytea") == 0)
        eng->payload = PAYLOAD_BYTES;
    else if (strcmp(type, "json") == 0 || strcmp(type, "jsonb") == 0)
        eng->payload = PAYLOAD_JSON;
    else
        eng->payload = PAYLOAD_TEXT; /* text columns are checked to hold JSON */
    return 0;
}

/* Loads each output's driver and checks its options. Exit code or 0. */
static int load_drivers(engine *eng)
{
    const relay_config *cfg = eng->cfg;
    eng->drivers = calloc(cfg->output_count, sizeof *eng->drivers);
    for (size_t i = 0; i < cfg->output_count; i++) {
        char err[1024];
        eng->drivers[i] = host_load_output(cfg, &cfg->outputs[i], err, sizeof err);
        if (!eng->drivers[i]) {
            log_error("%s", err);
            return 2;
        }
    }
    return 0;
}

static void unload_drivers(engine *eng)
{
    for (size_t i = 0; eng->drivers && i < eng->cfg->output_count; i++)
        loader_close(eng->drivers[i]);
    free(eng->drivers);
}

int engine_run(const relay_config *cfg, int drain)
{
    engine eng;
    memset(&eng, 0, sizeof eng);
    eng.cfg = cfg;
    eng.drain = drain;
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(eng.owner_prefix, sizeof eng.owner_prefix, "%s:%d:%lx", host, (int)getpid(),
             (unsigned long)(ts.tv_nsec ^ ts.tv_sec));

    int code = load_drivers(&eng);
    if (code == 0 && preflight(&eng) < 0)
        code = 1;
    if (code != 0) {
        unload_drivers(&eng);
        return code;
    }
    metrics_server *metrics = NULL;
    if (cfg->metrics_listen) {
        char err[512];
        if (!(metrics = metrics_start(&eng, cfg->metrics_listen, err, sizeof err))) {
            log_error("%s", err);
            unload_drivers(&eng);
            return 1;
        }
    }
    running = &eng;
    install_signals();
    log_info("relay starting: %d workers, batch %d, ordering %s, %zu outputs%s", cfg->workers,
             cfg->batch_size, cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none",
             cfg->output_count, drain ? ", drain" : "");

    worker **workers = calloc(cfg->workers, sizeof *workers);
    pthread_t *threads = calloc(cfg->workers, sizeof *threads);
    for (int i = 0; i < cfg->workers; i++) {
        workers[i] = worker_new(&eng, i);
        pthread_create(&threads[i], NULL, worker_main, workers[i]);
    }
    pthread_t cleaner;
    int cleaning = cfg->retention == RETAIN_MARK && cfg->retention_hours > 0 && !drain;
    if (cleaning)
        pthread_create(&cleaner, NULL, cleanup_main, &eng);
    for (int i = 0; i < cfg->workers; i++) {
        pthread_join(threads[i], NULL);
        worker_free(workers[i]);
    }
    engine_request_stop();
    if (cleaning)
        pthread_join(cleaner, NULL);
    free(workers);
    free(threads);
    metrics_stop(metrics);
    running = NULL;
    log_info("relay stopped: claimed %lld, published %lld, retried %lld, dead %lld, released %lld",
             atomic_load(&eng.claimed), atomic_load(&eng.published), atomic_load(&eng.retried),
             atomic_load(&eng.dead), atomic_load(&eng.released));
    unload_drivers(&eng);
    return atomic_load(&eng.failed) ? 1 : 0;
}
