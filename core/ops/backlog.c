#include "ops/backlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/text.h"
#include "db/db.h"
#include "db/own_tables.h"
#include "db/partitions.h"
#include "db/sql.h"
#include "host/source.h"
#include "ops/control.h"
#include "ops/progress.h"
#include "telemetry/counters.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Each count states a partial index's predicate (_aggregate_live,
 * _aggregate_dead), so published history is never read. */
#define BACKLOG_COUNTS                                                                            \
    "SELECT (SELECT count(*) FROM {table} WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL),"\
    " (SELECT count(*) FROM {table} WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL"        \
    "   AND " SQL_HELD("") "),"                                                                   \
    " (SELECT count(*) FROM {table} WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL),"  \
    " (SELECT coalesce(extract(epoch FROM now() - min({c.created_at})), 0) FROM {table}"          \
    "   WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL)"
static const char backlog_sql[] = BACKLOG_COUNTS;
/* a partitioned outbox's retired partitions left their dead rows there */
static const char backlog_partitioned_sql[] =
    BACKLOG_COUNTS ", (SELECT count(*) FROM {schema}.{n._dead_letter})";
/* clang-format on */

/* A poll that hangs must not keep the snapshot (and /readyz) stale for long. */
#define BACKLOG_STATEMENT_TIMEOUT "SET statement_timeout = 10000"
/* An operator's pause or resume is seen within this. */
#define PAUSES_POLL_MS 1000

static void store_failure(relay_metrics *m, const char *why)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->backlog.db_ok = 0;
    m->backlog.failures++;
    /* cut to fit on a character boundary: /readyz puts it in JSON */
    text_copy(m->backlog.db_error, sizeof m->backlog.db_error, why);
    pthread_mutex_unlock(&m->lock);
}

/* *conn connected (when NULL) and set up; on failure NULL, with err. */
static void connect_once(relay_state *st, PGconn **conn, char *err, size_t err_size)
{
    if (*conn)
        return;
    *conn = db_connect(st->cfg, "outbox-relay backlog", err, err_size);
    if (*conn && db_exec(*conn, BACKLOG_STATEMENT_TIMEOUT, err, err_size) < 0) {
        PQfinish(*conn);
        *conn = NULL;
    }
    if (!*conn)
        store_failure(st->metrics, err);
}

/* A poll's sample for the progress lines: what is pending (WAL mode: the
 * bytes its slot holds, source_kind.backlog_bytes) and what has finished. */
static void log_progress(relay_state *st, progress *pr, long long pending)
{
    char name[256], line[512];
    if (st->src->backlog_bytes)
        pending = st->src->backlog_bytes(st);
    pr->bytes = st->src->backlog_bytes != NULL;
    long long done = atomic_load(&st->stats.published) + atomic_load(&st->stats.dead);
    snprintf(name, sizeof name, "%s.%s", st->cfg->schema, st->cfg->table);
    if (progress_sample(pr, name, now_ms(), pending, done, line, sizeof line))
        log_info("%s", line);
}

/* One backlog poll on conn for the metrics and the progress lines; dropped
 * (NULL) on failure, with err. */
static void poll_once(relay_state *st, PGconn **conn, const char *sql, progress *pr, char *err,
                      size_t err_size)
{
    relay_metrics *m = st->metrics;
    PGresult *res = PQexec(*conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(*conn, res, err, err_size);
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
    b->dead =
        atoll(PQgetvalue(res, 0, 2)) + (PQnfields(res) > 4 ? atoll(PQgetvalue(res, 0, 4)) : 0);
    b->oldest_pending_s = atof(PQgetvalue(res, 0, 3));
    long long pending = b->pending;
    pthread_mutex_unlock(&m->lock);
    PQclear(res);
    log_progress(st, pr, pending);
}

/* What an operator paused, each second: logged when it changes (the run
 * read it once before its source started: outbox_run.c). A failed read
 * keeps the last set (the backlog poll reports the database); a refused
 * control table (db/own_tables.c) is logged, once while it lasts. */
static void read_pauses(relay_state *st, PGconn *conn)
{
    static _Thread_local char refused[512]; /* each outbox's poller thread its own */
    char err[512] = "";
    int changed = 0;
    int rc = conn ? control_read(conn, st->cfg, &st->pauses, &changed, err, sizeof err) : 0;
    if (rc < 0 && strstr(err, OWN_CONTROL_TABLE) && strcmp(err, refused) != 0)
        log_warn("operator control: %s", err);
    text_copy(refused, sizeof refused, rc < 0 ? err : "");
    if (rc == 0 && changed)
        control_log(&st->pauses);
}

void *backlog_main(void *arg)
{
    relay_state *st = arg;
    counters_thread_register(st->metrics, st->cfg->workers + BEAT_BACKLOG);
    const char *own = st->src->backlog;
    char *sql = sql_render(st->cfg, own                      ? own
                                    : partitions_on(st->cfg) ? backlog_partitioned_sql
                                                             : backlog_sql);
    PGconn *conn = NULL;
    progress pr = {0};
    int failing = 0;
    char err[512] = "";
    for (long long next = 0, next_pauses = 0; !atomic_load(&st->stop); usleep(100000)) {
        counters_beat();
        long long now = now_ms();
        int backlog_due = st->metrics && now >= next;
        if (!backlog_due && now < next_pauses)
            continue;
        next_pauses = now + PAUSES_POLL_MS;
        connect_once(st, &conn, err, sizeof err);
        if (conn && backlog_due) {
            next = now + BACKLOG_POLL_MS;
            poll_once(st, &conn, sql, &pr, err, sizeof err);
        }
        read_pauses(st, conn);
        if ((conn == NULL) != failing) { /* say it once per change, not per poll */
            failing = !conn;
            if (failing)
                log_warn("the backlog poller cannot read the database (metrics, /readyz and "
                         "operator pauses wait for it): %s",
                         err);
            else
                log_info("backlog poll works again");
        }
    }
    PQfinish(conn);
    free(sql);
    return NULL;
}
