#include "backlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "sql.h"
#include "counters.h"
#include "text.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Each count states a partial index's predicate (_aggregate_live,
 * _aggregate_dead), so published history is never read. */
static const char backlog_sql[] =
    "SELECT (SELECT count(*) FROM {table} WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL),"
    " (SELECT count(*) FROM {table} WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL"
    "   AND " SQL_HELD("") "),"
    " (SELECT count(*) FROM {table} WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL),"
    " (SELECT coalesce(extract(epoch FROM now() - min({c.created_at})), 0) FROM {table}"
    "   WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL)";
/* clang-format on */

/* A poll that hangs must not keep the snapshot (and /readyz) stale for long. */
#define BACKLOG_STATEMENT_TIMEOUT "SET statement_timeout = 10000"

static void store_failure(relay_metrics *m, const char *why)
{
    pthread_mutex_lock(&m->lock);
    m->backlog.db_ok = 0;
    m->backlog.failures++;
    /* cut to fit on a character boundary: /readyz puts it in JSON */
    text_copy(m->backlog.db_error, sizeof m->backlog.db_error, why);
    pthread_mutex_unlock(&m->lock);
}

/* One poll on *conn (connected first when NULL; dropped on failure). */
static void poll_once(relay_state *st, PGconn **conn, const char *sql)
{
    relay_metrics *m = st->metrics;
    char err[512];
    if (!*conn) {
        *conn = db_connect(st->cfg, "outbox-relay backlog", err, sizeof err);
        if (*conn && db_exec(*conn, BACKLOG_STATEMENT_TIMEOUT, err, sizeof err) < 0) {
            PQfinish(*conn);
            *conn = NULL;
        }
        if (!*conn) {
            store_failure(m, err);
            return;
        }
    }
    PGresult *res = PQexec(*conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(*conn, res, err, sizeof err);
        PQclear(res);
        PQfinish(*conn);
        *conn = NULL;
        store_failure(m, err);
        return;
    }
    pthread_mutex_lock(&m->lock);
    backlog_snapshot *b = &m->backlog;
    b->polled = b->db_ok = 1;
    b->db_error[0] = '\0';
    b->polled_at_ms = now_ms();
    b->polls++;
    b->pending = atoll(PQgetvalue(res, 0, 0));
    b->leased = atoll(PQgetvalue(res, 0, 1));
    b->dead = atoll(PQgetvalue(res, 0, 2));
    b->oldest_pending_s = atof(PQgetvalue(res, 0, 3));
    pthread_mutex_unlock(&m->lock);
    PQclear(res);
}

void *backlog_main(void *arg)
{
    relay_state *st = arg;
    counters_thread_register(st->metrics, st->cfg->workers + BEAT_BACKLOG);
    char *sql = sql_render(st->cfg, backlog_sql);
    PGconn *conn = NULL;
    int failing = 0;
    for (long long next = 0; !atomic_load(&st->stop); usleep(100000)) {
        counters_beat();
        if (now_ms() < next)
            continue;
        next = now_ms() + BACKLOG_POLL_MS;
        poll_once(st, &conn, sql);
        if ((conn == NULL) != failing) { /* say it once per change, not per poll */
            failing = !conn;
            if (failing)
                log_warn("backlog poll failed (metrics and /readyz say so): %s",
                         st->metrics->backlog.db_error);
            else
                log_info("backlog poll works again");
        }
    }
    PQfinish(conn);
    free(sql);
    return NULL;
}
