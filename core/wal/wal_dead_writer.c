#include "wal_dead_writer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "log.h"
#include "wal_dead.h"

#define SCOPE "wal"
#define RETRY_MS 1000

/* Waits up to ms for a job or the stop. Caller holds the lock. */
static void wait_locked(wal_dead_writer *dw, int ms)
{
    struct timespec until = clock_deadline(ms);
    pthread_cond_timedwait(&dw->wake, &dw->lock, &until);
}

/* Writes one job on *db, connecting first when needed. Returns 0 or -1. */
static int write_job(wal_dead_writer *dw, PGconn **db, const dead_job *job)
{
    const relay_config *cfg = dw->st->cfg;
    char err[512] = "";
    if (*db && db_lost(*db)) {
        PQfinish(*db);
        *db = NULL;
    }
    if (!*db)
        *db = db_connect(cfg, "outbox-relay", err, sizeof err);
    if (*db && wal_dead_insert(*db, cfg, job->row, job->attempt, job->error, job->commit_lsn, err,
                               sizeof err) == 0) {
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
    wal_dead_writer *dw = arg;
    PGconn *db = NULL;
    pthread_mutex_lock(&dw->lock);
    while (!dw->stop) {
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

void wal_dead_writer_start(wal_dead_writer *dw, relay_state *st)
{
    memset(dw, 0, sizeof *dw);
    dw->st = st;
    pthread_mutex_init(&dw->lock, NULL);
    pthread_cond_init(&dw->wake, NULL);
    pthread_create(&dw->thread, NULL, writer_main, dw);
}

void wal_dead_writer_free_jobs(dead_job *jobs)
{
    while (jobs) {
        dead_job *next = jobs->next;
        free(jobs->row);
        free(jobs->error);
        free(jobs);
        jobs = next;
    }
}

void wal_dead_writer_stop(wal_dead_writer *dw)
{
    pthread_mutex_lock(&dw->lock);
    dw->stop = 1;
    pthread_cond_signal(&dw->wake);
    pthread_mutex_unlock(&dw->lock);
    pthread_join(dw->thread, NULL);
    wal_dead_writer_free_jobs(dw->todo);
    wal_dead_writer_free_jobs(dw->written);
    pthread_mutex_destroy(&dw->lock);
    pthread_cond_destroy(&dw->wake);
}

void wal_dead_writer_submit(wal_dead_writer *dw, uint64_t seq, unsigned epoch, wal_row *row,
                            unsigned attempt, uint64_t commit_lsn, const char *error)
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

dead_job *wal_dead_writer_take(wal_dead_writer *dw)
{
    pthread_mutex_lock(&dw->lock);
    dead_job *jobs = dw->written;
    dw->written = NULL;
    for (dead_job *j = jobs; j; j = j->next)
        dw->pending--;
    pthread_mutex_unlock(&dw->lock);
    return jobs;
}

long wal_dead_writer_pending(wal_dead_writer *dw)
{
    pthread_mutex_lock(&dw->lock);
    long n = dw->pending;
    pthread_mutex_unlock(&dw->lock);
    return n;
}
