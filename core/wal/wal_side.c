#include "wal_side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "log.h"
#include "partitions.h"
#include "wal_dead.h"

#define SCOPE "wal"
#define RETRY_MS 1000
#define LAG_CHECK_MS 2000
#define PARTS_CHECK_MS 60000

/* Waits up to ms for a job or the stop. Caller holds the lock. */
static void wait_locked(wal_side *dw, int ms)
{
    struct timespec until = clock_deadline(ms);
    pthread_cond_timedwait(&dw->wake, &dw->lock, &until);
}

PGconn *wal_side_session(PGconn **db, const relay_config *cfg, char *err, size_t err_size)
{
    if (*db && db_lost(*db)) {
        PQfinish(*db);
        *db = NULL;
    }
    if (!*db)
        *db = db_connect(cfg, "outbox-relay", err, err_size);
    return *db;
}

/* The slot's lag into relay_state, a warning past lag_warn_mb; an
 * invalidated slot sets slot_lost. */
static void check_slot(wal_side *dw, PGconn **db)
{
    const relay_config *cfg = dw->st->cfg;
    long long bytes = 0;
    int lost = 0;
    char err[512] = "";
    if (!wal_side_session(db, cfg, err, sizeof err) ||
        wal_slot_lag(*db, cfg, &bytes, &lost, err, sizeof err) != 0) {
        log_scoped(OBX_LOG_DEBUG, SCOPE, "slot check: %s",
                   err); /* the stream says when it is gone */
        return;
    }
    if (lost) {
        if (!atomic_exchange(&dw->slot_lost, 1))
            log_error("replication slot %s was invalidated (the server removed WAL it still "
                      "needed: max_slot_wal_keep_size); run `outbox-relay init-db --reset-slot -c "
                      "%s` (see README, WAL mode)",
                      cfg->wal_slot, cfg->path);
        return;
    }
    atomic_store(&dw->st->wal_lag_bytes, bytes);
    long long limit = (long long)cfg->wal_lag_warn_mb * 1024 * 1024;
    if (bytes > limit && !dw->lag_warned)
        log_warn("replication slot %s holds %lld MB of WAL (over relay.wal.lag_warn_mb = %d); "
                 "the server keeps it until the relay confirms",
                 cfg->wal_slot, bytes >> 20, cfg->wal_lag_warn_mb);
    else if (bytes <= limit && dw->lag_warned)
        log_info("replication slot %s is back under relay.wal.lag_warn_mb", cfg->wal_slot);
    dw->lag_warned = bytes > limit;
}

/* relay.partitions: makes the partitions ahead, as poll mode's cleanup
 * does, so that inserts always find one. */
static void make_partitions(wal_side *dw, PGconn **db)
{
    char err[512];
    if (wal_side_session(db, dw->st->cfg, err, sizeof err))
        partitions_keep_ahead(*db, dw->st->cfg);
}

/* Writes one job on *db, connecting first when needed. Returns 0 or -1. */
static int write_job(wal_side *dw, PGconn **db, const dead_job *job)
{
    const relay_config *cfg = dw->st->cfg;
    char err[512] = "";
    int rc = wal_side_session(db, cfg, err, sizeof err)
                 ? wal_dead_insert(*db, cfg, job->row, job->attempt, job->error, job->commit_lsn,
                                   err, sizeof err)
                 : -1;
    if (rc == -2) { /* its fields do not fit the table: stored raw, never stuck */
        char refusal[512];
        snprintf(refusal, sizeof refusal, "%s", err);
        rc = wal_dead_insert_raw(*db, cfg, job->row, job->attempt, job->error, refusal,
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
    wal_side *dw = arg;
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
        if (now_ms() - dw->lag_checked_ms >= LAG_CHECK_MS) {
            dw->lag_checked_ms = now_ms();
            pthread_mutex_unlock(&dw->lock);
            if (dw->upkeep)
                dw->upkeep(dw->st, &db);
            else
                check_slot(dw, &db);
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

void wal_side_start(wal_side *dw, relay_state *st, side_upkeep upkeep)
{
    memset(dw, 0, sizeof *dw);
    dw->st = st;
    dw->upkeep = upkeep;
    pthread_mutex_init(&dw->lock, NULL);
    pthread_cond_init(&dw->wake, NULL);
    pthread_create(&dw->thread, NULL, writer_main, dw);
}

void wal_side_free_jobs(dead_job *jobs)
{
    while (jobs) {
        dead_job *next = jobs->next;
        free(jobs->row);
        free(jobs->error);
        free(jobs);
        jobs = next;
    }
}

void wal_side_stop(wal_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    dw->stop = 1;
    pthread_cond_signal(&dw->wake);
    pthread_mutex_unlock(&dw->lock);
    pthread_join(dw->thread, NULL);
    wal_side_free_jobs(dw->todo);
    wal_side_free_jobs(dw->written);
    pthread_mutex_destroy(&dw->lock);
    pthread_cond_destroy(&dw->wake);
}

void wal_side_submit(wal_side *dw, uint64_t seq, unsigned epoch, wal_row *row, unsigned attempt,
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

dead_job *wal_side_take(wal_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    dead_job *jobs = dw->written;
    dw->written = NULL;
    for (dead_job *j = jobs; j; j = j->next)
        dw->pending--;
    pthread_mutex_unlock(&dw->lock);
    return jobs;
}

int wal_side_slot_lost(wal_side *dw)
{
    return atomic_load(&dw->slot_lost);
}

long wal_side_pending(wal_side *dw)
{
    pthread_mutex_lock(&dw->lock);
    long n = dw->pending;
    pthread_mutex_unlock(&dw->lock);
    return n;
}
