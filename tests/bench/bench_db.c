/*
 * bench_db: the relay's own SQL alone. W threads, one connection each, run
 * the relay's claim and its happy-path mark, prepared by the relay's own code
 * (core/queries.c, for the table the config names), back to back with no
 * broker in between, until nothing is left to claim. The database limit the
 * relay is compared with is the simplest claim+mark run by pgbench (run.sh);
 * this shows what the relay's statements cost on their own.
 *
 *   bench_db -c CONFIG [-l RUN]       throughput: workers, batch, ordering,
 *                                     retention and lease from the relay config
 *   bench_db -c CONFIG -x [-l RUN]    EXPLAIN (ANALYZE, BUFFERS) of two claims
 *                                     and their marks (the first on a full table)
 *
 * RUN is the longest run per aggregate of an ordered claim (default: the batch
 * size, as for a driver that keeps order).
 *
 * Prints one line: "events seconds events_per_second", timed from the first
 * claim to the end of the last mark.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "db/db.h"
#include "db/pgarray.h"
#include "db/schema.h"
#include "poll/claimer.h"
#include "poll/queries.h"

static relay_config *cfg;
static int run_length, explain;
static atomic_llong total;
static atomic_int failed;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static PGresult *must(PGconn *c, PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) != want) {
        fprintf(stderr, "bench_db: %s: %s", what, PQerrorMessage(c));
        atomic_store(&failed, 1);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* A session as the relay's worker opens it: pinned settings, statement
 * timeout of the lease, the relay's statements prepared. */
static PGconn *open_session(void)
{
    char err[512], payload_type[64], timeout[64];
    PGconn *c = db_connect(cfg, "bench_db", err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench_db: %s\n", err);
        atomic_store(&failed, 1);
        return NULL;
    }
    snprintf(timeout, sizeof timeout, "SET statement_timeout = %d", cfg->lease_ms);
    if (db_exec(c, timeout, err, sizeof err) < 0 ||
        schema_payload_type(c, cfg, payload_type, sizeof payload_type, err, sizeof err) < 0 ||
        queries_prepare(c, cfg, payload_type, err, sizeof err) < 0) {
        fprintf(stderr, "bench_db: %s\n", err);
        atomic_store(&failed, 1);
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int pending(PGconn *c)
{
    PGresult *r =
        must(c, PQexecPrepared(c, "pending", 0, NULL, NULL, NULL, 0), PGRES_TUPLES_OK, "pending");
    int left = r && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return left;
}

/* What the relay's mark takes for row i of a claim: where it is locked, or its id */
static const char *mark_key(const PGresult *claim, int i)
{
    return PQgetisnull(claim, i, ROW_TID) ? PQgetvalue(claim, i, ROW_ID)
                                          : PQgetvalue(claim, i, ROW_TID);
}

/* One claim and its mark, as the worker runs them (the claim's transaction
 * is the lease). Returns the rows marked, 0 after an empty claim, -1 after
 * an error. */
static int claim_and_mark(PGconn *c, claimer *k, const char *del)
{
    const char *cp[CLAIM_PARAMS];
    int np = claimer_params(k, cp);
    PQclear(must(c, PQexec(c, "BEGIN"), PGRES_COMMAND_OK, "begin"));
    PGresult *claim =
        must(c, PQexecPrepared(c, "claim", np, cp, NULL, NULL, 0), PGRES_TUPLES_OK, "claim");
    if (!claim)
        return -1;
    int n = PQntuples(claim);
    claimer_advance(k, claim);
    if (n == 0) {
        PQclear(claim);
        PQclear(must(c, PQexec(c, "ROLLBACK"), PGRES_COMMAND_OK, "rollback"));
        return 0;
    }
    /* touch every field as the relay's message_build does */
    size_t bytes = 0;
    pgarray ids;
    pgarray_init(&ids);
    for (int i = 0; i < n; i++) {
        for (int f = 0; f < PQnfields(claim); f++)
            bytes += (size_t)PQgetlength(claim, i, f);
        pgarray_add(&ids, mark_key(claim, i), 1);
    }
    (void)bytes;
    PQclear(claim);
    const char *mp[] = {pgarray_text(&ids), del};
    PGresult *r = must(c, PQexecPrepared(c, "mark", 2, mp, NULL, NULL, 0), PGRES_TUPLES_OK, "mark");
    pgarray_free(&ids);
    if (!r)
        return -1;
    PQclear(r);
    if (!(r = must(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK, "commit")))
        return -1;
    PQclear(r);
    return n;
}

static void *worker(void *arg)
{
    (void)arg;
    PGconn *c = open_session();
    if (!c)
        return NULL;
    static atomic_llong place; /* shared by the connections, as by the relay's workers */
    claimer k = {0};
    claimer_configure(&k, cfg, run_length);
    claimer_share_place(&k, &place);
    const char *del = cfg->retention == RETAIN_DELETE ? "true" : "false";
    for (;;) {
        int n = claim_and_mark(c, &k, del);
        if (n < 0)
            break;
        if (n == 0) {
            /* another worker may hold the rest (a hot aggregate): wait for it, without
             * spinning claims that would compete with its mark */
            if (!pending(c))
                break;
            usleep(10000);
            continue;
        }
        atomic_fetch_add(&total, n);
    }
    claimer_free(&k);
    PQfinish(c);
    return NULL;
}

/* Claims before the second explained one, for the heads limit to settle. */
#define WARM_UP_CLAIMS 20
#define WARM_UP_TEXT "21"

/* EXPLAIN (ANALYZE, BUFFERS) EXECUTE of a prepared statement, printed. */
static void explain_execute(PGconn *c, const char *title, const char *stmt, int n,
                            const char *const *params)
{
    size_t cap = 256;
    for (int i = 0; i < n; i++)
        cap += (params[i] ? strlen(params[i]) * 2 + 3 : 4) + 2;
    char *sql = malloc(cap);
    size_t len = (size_t)snprintf(sql, cap, "EXPLAIN (ANALYZE, BUFFERS) EXECUTE %s(", stmt);
    for (int i = 0; i < n; i++) {
        if (i)
            sql[len++] = ',';
        if (!params[i]) {
            len += (size_t)snprintf(sql + len, cap - len, "NULL");
            continue;
        }
        char *lit = PQescapeLiteral(c, params[i], strlen(params[i]));
        len += (size_t)snprintf(sql + len, cap - len, "%s", lit);
        PQfreemem(lit);
    }
    snprintf(sql + len, cap - len, ")");
    PGresult *r = must(c, PQexec(c, sql), PGRES_TUPLES_OK, title);
    free(sql);
    printf("### %s\n", title);
    for (int i = 0; r && i < PQntuples(r); i++)
        printf("%s\n", PQgetvalue(r, i, 0));
    printf("\n");
    PQclear(r);
}

static int explain_run(void)
{
    PGconn *c = open_session();
    if (!c)
        return 1;
    const char *del = cfg->retention == RETAIN_DELETE ? "true" : "false";
    const char *order = cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none";
    claimer k = {0};
    claimer_configure(&k, cfg, run_length);
    for (int round = 1; round <= 2; round++) {
        char title[200];
        if (round == 2) /* the steady state: the walk's heads learned from earlier claims */
            for (int i = 0; i < WARM_UP_CLAIMS; i++)
                claim_and_mark(c, &k, del);
        const char *cp[CLAIM_PARAMS];
        int np = claimer_params(&k, cp);
        PQclear(must(c, PQexec(c, "BEGIN"), PGRES_COMMAND_OK, "begin"));
        snprintf(title, sizeof title, "relay claim, ordering %s, batch %s, %s", order, k.batch,
                 round == 1 ? "claim 1 (full table)" : "after " WARM_UP_TEXT " batches marked");
        if (np == CLAIM_PARAMS)
            snprintf(title + strlen(title), sizeof title - strlen(title), " (at most %s heads)",
                     k.heads_text);
        explain_execute(c, title, "claim", np, cp);
        /* the rows the explained claim locked, as the worker would mark them */
        PGresult *again =
            must(c, PQexecPrepared(c, "claim", np, cp, NULL, NULL, 0), PGRES_TUPLES_OK, "claim");
        pgarray ids;
        pgarray_init(&ids);
        for (int i = 0; again && i < PQntuples(again); i++)
            pgarray_add(&ids, mark_key(again, i), 1);
        if (again)
            claimer_advance(&k, again);
        PQclear(again);
        const char *mp[] = {pgarray_text(&ids), del};
        snprintf(title, sizeof title, "relay mark (retention %s), the claim's rows",
                 cfg->retention == RETAIN_DELETE ? "delete" : "mark");
        explain_execute(c, title, "mark", 2, mp);
        pgarray_free(&ids);
        PQclear(must(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK, "commit"));
    }
    claimer_free(&k);
    PQfinish(c);
    return atomic_load(&failed) ? 1 : 0;
}

int main(int argc, char **argv)
{
    int opt;
    const char *path = NULL;
    run_length = -1;
    while ((opt = getopt(argc, argv, "c:l:x")) != -1) {
        switch (opt) {
        case 'c': path = optarg; break;
        case 'l': run_length = atoi(optarg); break;
        case 'x': explain = 1; break;
        default: fprintf(stderr, "usage: bench_db -c CONFIG [-l RUN] [-x]\n"); return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "bench_db: -c CONFIG (a relay config) is required\n");
        return 2;
    }
    char err[1024];
    if (!(cfg = config_load(path, err, sizeof err))) {
        fprintf(stderr, "bench_db: %s\n", err);
        return 2;
    }
    if (run_length < 1)
        run_length = cfg->batch_size;
    if (explain) {
        int rc = explain_run();
        config_free(cfg);
        return rc;
    }
    pthread_t *t = calloc((size_t)cfg->workers, sizeof *t);
    double t0 = now_s();
    for (int i = 0; i < cfg->workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < cfg->workers; i++)
        pthread_join(t[i], NULL);
    double secs = now_s() - t0;
    free(t);
    config_free(cfg);
    if (atomic_load(&failed))
        return 1;
    long long n = atomic_load(&total);
    printf("%lld %.3f %.0f\n", n, secs, secs > 0 ? n / secs : 0.0);
    return 0;
}
