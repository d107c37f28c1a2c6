/* WAL mode's dead letters, written by a thread of their own with its own
 * connection (made and remade there), so the stream thread never connects
 * or waits for the database inside its send loop. A job is retried until
 * its row is written or the writer stops; what was not written is not
 * confirmed, so the slot sends it again. */
#ifndef OBX_WAL_DEAD_WRITER_H
#define OBX_WAL_DEAD_WRITER_H

#include <pthread.h>
#include <stdint.h>

#include "relay_state.h"
#include "wal_decode.h"

typedef struct dead_job {
    uint64_t seq;   /* the event's place in the window */
    unsigned epoch; /* the window's: a job from before a reconnect finishes nothing */
    wal_row *row;   /* owned by the job until written */
    unsigned attempt;
    uint64_t commit_lsn;
    char *error;
    struct dead_job *next;
} dead_job;

typedef struct wal_dead_writer {
    relay_state *st;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    dead_job *todo, *todo_tail; /* in submit order */
    dead_job *written;          /* for the stream thread (wal_dead_writer_take) */
    long pending;               /* submitted, not yet taken back */
    int stop;
} wal_dead_writer;

void wal_dead_writer_start(wal_dead_writer *dw, relay_state *st);
/* Stops and joins the thread; jobs not written are dropped (never confirmed). */
void wal_dead_writer_stop(wal_dead_writer *dw);

/* Queues the event's dead letter; takes row, copies error. */
void wal_dead_writer_submit(wal_dead_writer *dw, uint64_t seq, unsigned epoch, wal_row *row,
                            unsigned attempt, uint64_t commit_lsn, const char *error);

/* The jobs written since the last call (their rows freed); the caller frees
 * the list with wal_dead_writer_free_jobs. */
dead_job *wal_dead_writer_take(wal_dead_writer *dw);
/* Jobs submitted and not yet taken back. */
long wal_dead_writer_pending(wal_dead_writer *dw);
void wal_dead_writer_free_jobs(dead_job *jobs);

#endif
