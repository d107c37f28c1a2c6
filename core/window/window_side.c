#include "window/window_side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/db.h"
#include "db/partitions.h"
#include "window/dead_table.h"

#define SCOPE "wal"
#define RETRY_MS 1000
#define UPKEEP_MS 2000
#define PARTS_CHECK_MS 60000

/* Waits up to ms for a job or the stop. Caller holds the lock. */
static void wait_locked(window_side *dw, int ms)
{
    struct timespec until = clock_deadline(ms);
    pthread_cond_timedwait(&dw->wake, &dw->lock, &until);
}

PGconn *window_side_session(PGconn **db, const relay_config *cfg, char *err, size_t err_size)
{
    if (*db && db_lost(*db)) {
        PQfinish(*db);
        *db = NULL;
    }
    if (!*db)
        *db = db_connect(cfg, "outbox-relay", err, err_size);
    return *db;
}


/* relay.partitions: makes the partitions ahead, as poll mode's cleanup
 * does, so that inserts always find one. */
static void make_partitions(window_side *dw, PGconn **db)
{
    char err[512];
    if (window_side_session(db, dw->st->cfg, err, sizeof err))
        partitions_keep_ahead(*db, dw->st->cfg, &dw->st->squats);
}

/* Writes one job on *db, connecting first when needed. Returns 0 or -1. */
static int write_job(window_side *dw, PGconn **db, const dead_job *job)
{
    const relay_config *cfg = dw->st->cfg;
    char err[512] = "";
    int rc = window_side_session(db, cfg, err, sizeof err)
                 ? dead_table_insert(*db, cfg, job->row, job->attempt, job->error, job->commit_lsn,
                                   err, sizeof err)
                 : -1;
    if (rc == -2) { /* its fields do not fit the table: stored raw, never stuck */
        char refusal[512];
        snprintf(refusal, sizeof refusal, "%s", err);
        rc = dead_table_insert_raw(*db, cfg, job->row, job->attempt, job->error, refusal,
                                 job->commit_lsn, err, sizeof err);
    }
    if (rc == 0) {
        const char *id = job->row->v[WF_EVENT_ID];
        log_scoped(OBX_LOG_WARN, SCOPE, "event %s dead-lettered: %s", id ? id : "(no event_id)",
                   job->error);
        return 0;
    }
    log_scoped(OBX_LOG_ERROR, SCOPE, "cannot write a dead letter (retrying in 1 s): %s", err);
    return -1;
}

static void *writer_main(void *arg)
{
    window_side *dw = arg;
    log_thread_source(dw->st->cfg->source_name);
    PGconn *db = NULL;
    pthread_mutex_lock(&dw->lock);
    while (!dw->stop) {
        if (partitions_on(dw->st->cfg) && now_ms() - dw->parts_checked_ms >= PARTS_CHECK_MS) {
            dw->parts_checked_ms = now_ms();
            pthread_mutex_unlock(&dw->lock);
            make_partitions(dw, &db);
            pthread_mutex_lock(&dw->lock);
            continue;
        }
        if (now_ms() - dw->upkeep_ms >= UPKEEP_MS) {
            dw->upkeep_ms = now_ms();
            pthread_mutex_unlock(&dw->lock);
            if (dw->upkeep)
                dw->upkeep(dw->upkeep_arg, dw->st, &db);
            pthread_mutex_lock(&dw->lock);
            continue;
        }
        dead_job *job = dw->todo;
        if (!job) {
            wait_locked(dw, RETRY_MS);
            continue;
        }
        pthread_mutex_unlock(&dw->lock);
        int rc = write_job(dw, &db, job); /* the head stays queued until written */
        pthread_mutex_lock(&dw->lock);
        if (rc < 0) {
            wait_locked(dw, RETRY_MS);
            continue;
        }
        dw->todo = job->next;
        if (!dw->todo)
            dw->todo_tail = NULL;
        free(job->row);
        job->row = NULL;
        job->next = dw->written;
        dw->written = job;
    }
    pthread_mutex_unlock(&dw->lock);
    if (db)
        PQfinish(db);
    return NULL;
}

void window_side_start(window_side *dw, relay_state *st, side_upkeep upkeep, void *upkeep_arg)
{
    memset(dw, 0, sizeof *dw);
    dw->st = st;
    dw->upkeep = upkeep;
    dw->upkeep_arg = upkeep_arg;
    pthread_mutex_init(&dw->lock, NULL);
    pthread_cond_init(&dw->wake, NULL);
    pthread_create(&dw->thread, NULL, writer_main, dw);
}

void window_side_free_jobs(dead_job *jobs)
{
    while (jobs) {
        dead_job *next = jobs->next;
        free(jobs->row);
        free(jobs->error);
        free(jobs);
        jobs = next;
    }
}

void window_side_stop(window_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    dw->stop = 1;
    pthread_cond_signal(&dw->wake);
    pthread_mutex_unlock(&dw->lock);
    pthread_join(dw->thread, NULL);
    window_side_free_jobs(dw->todo);
    window_side_free_jobs(dw->written);
    pthread_mutex_destroy(&dw->lock);
    pthread_cond_destroy(&dw->wake);
}

void window_side_submit(window_side *dw, uint64_t seq, unsigned epoch, event_row *row, unsigned attempt,
                     uint64_t commit_lsn, const char *error)
{
    dead_job *job = calloc(1, sizeof *job);
    *job = (dead_job){seq, epoch, row, attempt, commit_lsn, strdup(error), NULL};
    pthread_mutex_lock(&dw->lock);
    if (dw->todo_tail)
        dw->todo_tail->next = job;
    else
        dw->todo = job;
    dw->todo_tail = job;
    dw->pending++;
    pthread_cond_signal(&dw->wake);
    pthread_mutex_unlock(&dw->lock);
}

dead_job *window_side_take(window_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    dead_job *jobs = dw->written;
    dw->written = NULL;
    for (dead_job *j = jobs; j; j = j->next)
        dw->pending--;
    pthread_mutex_unlock(&dw->lock);
    return jobs;
}


long window_side_pending(window_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    long n = dw->pending;
    pthread_mutex_unlock(&dw->lock);
    return n;
}
