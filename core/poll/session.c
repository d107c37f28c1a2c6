#include "poll/session.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "db/db.h"
#include "poll/queries.h"
#include "telemetry/counters.h" /* metrics: call sites marked "counters:" */

#define STATEMENT_TIMEOUT_FLOOR_MS 10000

void session_init(session *s, relay_state *st, const char *scope, const char *payload_type)
{
    memset(s, 0, sizeof *s);
    s->st = st;
    s->scope = scope;
    s->payload_type = payload_type;
    pthread_mutex_init(&s->lock, NULL);
}

void session_free(session *s)
{
    session_disconnect(s);
    pthread_mutex_destroy(&s->lock);
}

void session_disconnect(session *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->cancel)
        PQfreeCancel(s->cancel);
    s->cancel = NULL;
    pthread_mutex_unlock(&s->lock);
    PQfinish(s->conn);
    s->conn = NULL;
    s->in_transaction = 0;
}

static int setup(session *s, int kind, char *err, size_t err_size)
{
    const relay_config *cfg = s->st->cfg;
    char timeout[128];
    s->listening = 0;
    /*
     * The claim's transaction is the batch's lease (queries.c): a session
     * idle in it for longer than the lease is ended by PostgreSQL, which
     * releases its rows to the other workers and makes its late record fail.
     * A worker waiting for acknowledgements keeps it busy (renew). A running
     * statement is bounded separately, by at least 10 s: a claim slower than
     * a short lease must still be able to finish on a busy database (else
     * every claim is cancelled and retried as slowly: the chaos suite saw
     * minutes without a delivery at lease 2 s).
     */
    snprintf(timeout, sizeof timeout,
             "SET statement_timeout = %d; SET idle_in_transaction_session_timeout = %d",
             cfg->lease_ms > STATEMENT_TIMEOUT_FLOOR_MS ? cfg->lease_ms
                                                        : STATEMENT_TIMEOUT_FLOOR_MS,
             cfg->lease_ms);
    /* preparing waits for a lock on the table: a stop cancels it as it
     * cancels a claim (kind), or, when it is to record, past the deadline */
    pthread_mutex_lock(&s->lock);
    s->cancel = PQgetCancel(s->conn);
    s->running = kind;
    pthread_mutex_unlock(&s->lock);
    int rc = db_exec(s->conn, timeout, err, err_size) < 0 ||
                     queries_prepare(s->conn, cfg, s->payload_type, err, err_size) < 0
                 ? -1
                 : 0;
    pthread_mutex_lock(&s->lock);
    s->running = SESSION_IDLE;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int stopping(const session *s)
{
    return atomic_load(&s->st->stop) != 0;
}

int session_connect(session *s, long long deadline, int honour_stop)
{
    if (s->conn && !db_lost(s->conn))
        return 0;
    if (s->conn) {
        log_scoped(OBX_LOG_WARN, s->scope, "database connection lost; reconnecting");
        session_disconnect(s);
    }
    char err[1024];
    for (;;) {
        long long now = now_ms();
        if ((honour_stop && stopping(s)) || now >= deadline)
            return -1;
        if (now < s->retry_at) { /* backing off: sleep toward it, not past the deadline */
            long long until = s->retry_at < deadline ? s->retry_at : deadline;
            counters_beat(); /* counters: liveness while the database is away */
            usleep(1000 * (until - now < 50 ? until - now : 50));
            continue;
        }
        counters_beat(); /* counters: liveness while the database is away */
        s->conn = db_connect(s->st->cfg, "outbox-relay", err, sizeof err);
        if (s->conn &&
            setup(s, honour_stop ? SESSION_CLAIM : SESSION_OTHER, err, sizeof err) == 0) {
            s->backoff_ms = 0;
            s->retry_at = 0;
            return 0;
        }
        session_disconnect(s);
        int backoff = s->backoff_ms ? s->backoff_ms : 100;
        log_scoped(OBX_LOG_WARN, s->scope, "%s; retrying in %d ms", err, backoff);
        s->retry_at = now_ms() + backoff;
        s->backoff_ms = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
}

static void set_running(session *s, int kind)
{
    pthread_mutex_lock(&s->lock);
    s->running = kind;
    pthread_mutex_unlock(&s->lock);
}

/* Logs a failed statement; a lost connection is dropped, to be made again. */
static void failed(session *s, const char *what, const char *err)
{
    log_scoped(OBX_LOG_WARN, s->scope, "%s failed: %s", what, err);
    if (db_lost(s->conn)) {
        log_scoped(OBX_LOG_WARN, s->scope, "database connection lost; reconnecting");
        session_disconnect(s);
    }
}

/* PQexecPrepared, calling while_waiting while the result is not there. */
static PGresult *exec_waiting(session *s, const char *stmt, int nparams, const char *const *params)
{
    if (!PQsendQueryPrepared(s->conn, stmt, nparams, params, NULL, NULL, 0))
        return NULL;
    while (PQisBusy(s->conn)) {
        struct pollfd pfd = {.fd = PQsocket(s->conn), .events = POLLIN};
        int rc = poll(&pfd, 1, 100);
        if (rc == 0 || (rc < 0 && errno == EINTR)) {
            s->while_waiting(s->while_waiting_arg);
            continue;
        }
        if (rc < 0 || !PQconsumeInput(s->conn))
            break;
    }
    /* one statement, one result; a later one (an error) replaces it */
    PGresult *res = NULL, *more;
    while ((more = PQgetResult(s->conn))) {
        PQclear(res);
        res = more;
    }
    return res;
}

static PGresult *run(session *s, int kind, const char *stmt, int nparams, const char *const *params,
                     ExecStatusType want, int waiting)
{
    if (!s->conn)
        return NULL;
    set_running(s, kind);
    long long started_us = counters_now_us(); /* counters: statement duration */
    PGresult *res = waiting && s->while_waiting
                        ? exec_waiting(s, stmt, nparams, params)
                        : PQexecPrepared(s->conn, stmt, nparams, params, NULL, NULL, 0);
    counters_observe_statement(s->st->metrics, stmt, counters_now_us() - started_us); /* counters */
    set_running(s, SESSION_IDLE);
    if (PQresultStatus(res) == want)
        return res;
    char err[1024];
    db_error(s->conn, res, err, sizeof err);
    PQclear(res);
    failed(s, stmt, err);
    return NULL;
}

PGresult *session_run(session *s, int kind, const char *stmt, int nparams,
                      const char *const *params, ExecStatusType want)
{
    return run(s, kind, stmt, nparams, params, want, 1);
}

PGresult *session_run_plain(session *s, int kind, const char *stmt, int nparams,
                            const char *const *params, ExecStatusType want)
{
    return run(s, kind, stmt, nparams, params, want, 0);
}

int session_listen(session *s, int on)
{
    if (!s->conn || s->listening == on)
        return s->conn ? 0 : -1;
    if (on && s->in_transaction)
        return -1; /* it would listen only from the claim's commit on */
    char err[512];
    if (db_listen(s->conn, s->st->cfg, on, err, sizeof err) < 0) {
        log_scoped(OBX_LOG_WARN, s->scope, "%s", err);
        return -1;
    }
    s->listening = on;
    return 0;
}

int session_notified(session *s)
{
    if (!s->conn)
        return -1;
    if (s->in_transaction)
        return 0;
    if (!PQconsumeInput(s->conn)) {
        session_disconnect(s);
        return -1;
    }
    int notified = 0;
    PGnotify *n;
    while ((n = PQnotifies(s->conn))) {
        PQfreemem(n);
        notified = 1;
    }
    return notified;
}

/* Runs a transaction control command; a lost connection is dropped. */
static int control(session *s, const char *command)
{
    char err[1024];
    if (!s->conn)
        return -1;
    if (db_exec(s->conn, command, err, sizeof err) == 0)
        return 0;
    failed(s, command, err);
    return -1;
}

int session_begin(session *s)
{
    if (control(s, "BEGIN") < 0)
        return -1;
    s->in_transaction = 1;
    return 0;
}

int session_commit(session *s)
{
    s->in_transaction = 0;
    return control(s, "COMMIT");
}

void session_rollback(session *s)
{
    if (s->in_transaction && control(s, "ROLLBACK") < 0)
        session_disconnect(s); /* never leave a transaction behind on a kept session */
    s->in_transaction = 0;
}

void session_cancel(session *s, int kind)
{
    pthread_mutex_lock(&s->lock);
    if (s->cancel && s->running != SESSION_IDLE && (kind == SESSION_OTHER || s->running == kind)) {
        char err[256];
        PQcancel(s->cancel, err, sizeof err);
    }
    pthread_mutex_unlock(&s->lock);
}
