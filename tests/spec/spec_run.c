/* A permutation: a fresh database with the relay's schema and the spec's
 * setup, one connection per session, then the steps in order, each sent
 * without waiting; a step blocked by another session is left waiting and
 * reported as PostgreSQL's isolation tester does. */
#include "spec_run.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db.h"
#include "db/schema.h"
#include "poll/queries.h"

#define STEP_TIMEOUT_MS 30000

enum { STEP_DONE, STEP_WAITING, STEP_FAILED };

static long long clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* notices are not part of the output */
}

void spec_print_result(FILE *out, const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_TUPLES_OK) {
        for (int f = 0; f < PQnfields(res); f++)
            fprintf(out, "%s%s", f ? "|" : "", PQfname(res, f));
        fputc('\n', out);
        for (int r = 0; r < PQntuples(res); r++) {
            for (int f = 0; f < PQnfields(res); f++)
                fprintf(out, "%s%s", f ? "|" : "",
                        PQgetisnull(res, r, f) ? "<NULL>" : PQgetvalue(res, r, f));
            fputc('\n', out);
        }
    } else if (st != PGRES_COMMAND_OK && st != PGRES_EMPTY_QUERY) {
        const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY);
        fprintf(out, "%s:  %s\n", sev ? sev : "ERROR", msg ? msg : PQresStatus(st));
    }
}

/* Runs sql on conn, printing only errors (setup and teardown). */
static int exec_quiet(spec_ctx *ctx, PGconn *conn, const char *what, const char *sql)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
    if (!ok) {
        fprintf(ctx->out, "%s: ", what);
        spec_print_result(ctx->out, res);
    }
    PQclear(res);
    return ok ? 0 : -1;
}

static int fresh_database(spec_ctx *ctx)
{
    PGconn *pg = PQconnectdb("dbname=postgres");
    char sql[256];
    int rc = PQstatus(pg) == CONNECTION_OK ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "connecting to postgres: %s", PQerrorMessage(pg));
    PQsetNoticeProcessor(pg, quiet, NULL);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", ctx->db);
    rc = rc < 0 ? rc : exec_quiet(ctx, pg, "drop database", sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", ctx->db);
    rc = rc < 0 ? rc : exec_quiet(ctx, pg, "create database", sql);
    PQfinish(pg);
    return rc;
}

static PGconn *connect_as(spec_ctx *ctx, const char *name)
{
    char err[1024], app[96];
    snprintf(app, sizeof app, "spec_%s", name);
    PGconn *conn = db_connect(ctx->cfg, app, err, sizeof err);
    if (!conn) {
        fprintf(stderr, "connecting %s: %s\n", name, err);
        return NULL;
    }
    PQsetNoticeProcessor(conn, quiet, NULL);
    /* the relay's sessions keep its path (pg_catalog, pg_temp: its names are
     * qualified); the others play the application and name its tables */
    PGresult *res = strcmp(name, "relay") != 0
                        ? PQexec(conn, "SET search_path = pg_catalog, public, pg_temp")
                        : NULL;
    PQclear(res);
    return conn;
}

/* The database, the schema init-db installs, the spec's setup. */
static int prepare_database(spec_ctx *ctx)
{
    if (fresh_database(ctx) < 0 || !(ctx->control = connect_as(ctx, "control")))
        return -1;
    char err[1024];
    if (schema_install(ctx->control, ctx->cfg, ADOPT_ASK, err, sizeof err) < 0) {
        fprintf(stderr, "init-db: %s\n", err);
        return -1;
    }
    for (int i = 0; i < ctx->s->nsetup; i++)
        if (exec_quiet(ctx, ctx->control, "setup", ctx->s->setup[i]) < 0)
            return -1;
    if (schema_payload_type(ctx->control, ctx->cfg, ctx->payload_type, sizeof ctx->payload_type,
                             err, sizeof err) < 0) {
        fprintf(stderr, "payload type: %s\n", err);
        return -1;
    }
    return 0;
}

static int connect_sessions(spec_ctx *ctx)
{
    size_t used = (size_t)snprintf(ctx->pids, sizeof ctx->pids, "{");
    for (int i = 0; i < ctx->s->nsessions; i++) {
        spec_conn *c = &ctx->conns[i];
        const spec_session *se = &ctx->s->sessions[i];
        char err[1024];
        if (!(c->conn = connect_as(ctx, se->name)))
            return -1;
        if (queries_prepare(c->conn, ctx->cfg, ctx->payload_type, err, sizeof err) < 0) {
            fprintf(stderr, "session %s: %s\n", se->name, err);
            return -1;
        }
        c->pid = PQbackendPID(c->conn);
        used += (size_t)snprintf(ctx->pids + used, sizeof ctx->pids - used, "%s%d", i ? "," : "",
                                 c->pid);
    }
    snprintf(ctx->pids + used, sizeof ctx->pids - used, "}");
    for (int i = 0; i < ctx->s->nsessions; i++)
        if (ctx->s->sessions[i].setup &&
            exec_quiet(ctx, ctx->conns[i].conn, "session setup", ctx->s->sessions[i].setup) < 0)
            return -1;
    return 0;
}

/* Is session c's backend waiting for a lock another session holds? */
static int blocked(spec_ctx *ctx, const spec_conn *c)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", c->pid);
    const char *params[] = {pid, ctx->pids};
    PGresult *res =
        PQexecParams(ctx->control, "SELECT pg_catalog.pg_isolation_test_session_is_blocked($1, $2)",
                     2, NULL, params, NULL, NULL, 0);
    int is = PQresultStatus(res) == PGRES_TUPLES_OK && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return is;
}

static void cancel(spec_conn *c)
{
    PGcancel *cancel = PQgetCancel(c->conn);
    char err[256];
    PQcancel(cancel, err, sizeof err);
    PQfreeCancel(cancel);
}

/* Waits until the step running on c has its result, or (check_blocked) is
 * blocked by another session. A step still running after the timeout is
 * cancelled (a runner error). */
static int settle(spec_ctx *ctx, spec_conn *c, const spec_step *st, int check_blocked)
{
    long long deadline = clock_ms() + STEP_TIMEOUT_MS;
    for (;;) {
        if (!PQconsumeInput(c->conn)) {
            fprintf(ctx->out, "step %s: connection lost: %s", st->name, PQerrorMessage(c->conn));
            ctx->errors++;
            return STEP_FAILED;
        }
        if (!PQisBusy(c->conn))
            return STEP_DONE;
        if (check_blocked && blocked(ctx, c))
            return STEP_WAITING;
        if (clock_ms() > deadline) {
            fprintf(ctx->out, "step %s: still running after %d ms: cancelled\n", st->name,
                    STEP_TIMEOUT_MS);
            cancel(c);
            deadline = clock_ms() + STEP_TIMEOUT_MS;
            ctx->errors++;
        }
        struct pollfd pfd = {.fd = PQsocket(c->conn), .events = POLLIN};
        poll(&pfd, 1, 10);
    }
}

/* Prints the results of the step that completed on c. */
static void collect(spec_ctx *ctx, spec_conn *c, const spec_step *st)
{
    PGresult *res;
    while ((res = PQgetResult(c->conn))) {
        if (st->sql) {
            spec_print_result(ctx->out, res);
            PQclear(res);
        } else {
            spec_relay_print(ctx, c, st, res); /* owns res */
        }
    }
}

/* The waiting session that began waiting first after `after`, or NULL. */
static spec_conn *waiting_after(spec_ctx *ctx, long after)
{
    spec_conn *first = NULL;
    for (int i = 0; i < ctx->s->nsessions; i++) {
        spec_conn *c = &ctx->conns[i];
        if (c->waiting >= 0 && c->waiting_seq > after &&
            (!first || c->waiting_seq < first->waiting_seq))
            first = c;
    }
    return first;
}

/* Completes the waiting steps that can complete now, in the order they
 * began waiting, until those left are all blocked; at the end of a
 * permutation (final) those are cancelled. */
static void complete_waiting(spec_ctx *ctx, int final)
{
    for (spec_conn *c = waiting_after(ctx, -1); c;) {
        const spec_step *st = &ctx->s->steps[c->waiting];
        int rc = settle(ctx, c, st, 1);
        if (rc == STEP_WAITING) {
            c = waiting_after(ctx, c->waiting_seq);
            continue;
        }
        fprintf(ctx->out, "step %s: <... completed>\n", st->name);
        if (rc == STEP_DONE)
            collect(ctx, c, st);
        c->waiting = -1;
        c = waiting_after(ctx, -1); /* a completion may have released an earlier one */
    }
    for (spec_conn *c = waiting_after(ctx, -1); final && c; c = waiting_after(ctx, -1)) {
        const spec_step *st = &ctx->s->steps[c->waiting];
        fprintf(ctx->out, "step %s: still waiting at the end: cancelled\n", st->name);
        ctx->errors++;
        cancel(c);
        if (settle(ctx, c, st, 0) == STEP_DONE)
            collect(ctx, c, st);
        c->waiting = -1;
    }
}

static void print_step_text(spec_ctx *ctx, const spec_step *st)
{
    fprintf(ctx->out, "step %s: ", st->name);
    if (st->sql) {
        fputs(st->sql, ctx->out);
        return;
    }
    fputs(st->stmt, ctx->out);
    for (int a = 0; a < st->nargs; a++)
        fprintf(ctx->out, " %s", st->args[a]);
}

static void run_step(spec_ctx *ctx, int index, long seq)
{
    const spec_step *st = &ctx->s->steps[index];
    spec_conn *c = &ctx->conns[st->session];
    if (c->waiting >= 0) {
        fprintf(ctx->out, "step %s: its session waits in step %s\n", st->name,
                ctx->s->steps[c->waiting].name);
        ctx->errors++;
        return;
    }
    print_step_text(ctx, st);
    int sent = st->sql ? PQsendQuery(c->conn, st->sql) : spec_relay_send(ctx, c, st);
    if (!sent) {
        fprintf(ctx->out, "\nnot sent: %s", PQerrorMessage(c->conn));
        ctx->errors++;
        return;
    }
    int rc = settle(ctx, c, st, 1);
    if (rc == STEP_WAITING) {
        fputs(" <waiting ...>\n", ctx->out);
        c->waiting = index;
        c->waiting_seq = seq;
        return;
    }
    fputc('\n', ctx->out);
    if (rc == STEP_DONE)
        collect(ctx, c, st);
    complete_waiting(ctx, 0);
}

static void disconnect(spec_ctx *ctx)
{
    for (int i = 0; i < ctx->s->nsessions; i++) {
        spec_conn *c = &ctx->conns[i];
        PQfinish(c->conn);
        if (c->claimed)
            batch_free(&c->b);
        memset(c, 0, sizeof *c);
        c->waiting = -1;
    }
    PQfinish(ctx->control);
    ctx->control = NULL;
}

int spec_run_permutation(spec_ctx *ctx, int p)
{
    const spec_permutation *perm = &ctx->s->perms[p];
    fprintf(ctx->out, "%sstarting permutation:", p ? "\n" : "");
    for (int i = 0; i < perm->nsteps; i++)
        fprintf(ctx->out, " %s", ctx->s->steps[perm->steps[i]].name);
    fputc('\n', ctx->out);
    for (int i = 0; i < ctx->s->nsessions; i++)
        ctx->conns[i].waiting = -1;
    int rc = prepare_database(ctx) == 0 && connect_sessions(ctx) == 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < perm->nsteps; i++)
        run_step(ctx, perm->steps[i], i);
    if (rc == 0)
        complete_waiting(ctx, 1);
    for (int i = 0; rc == 0 && i < ctx->s->nsessions; i++)
        if (ctx->s->sessions[i].teardown)
            exec_quiet(ctx, ctx->conns[i].conn, "session teardown", ctx->s->sessions[i].teardown);
    if (rc == 0 && ctx->s->teardown)
        exec_quiet(ctx, ctx->control, "teardown", ctx->s->teardown);
    disconnect(ctx);
    return rc;
}
