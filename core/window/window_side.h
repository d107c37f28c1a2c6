/* WAL mode's side thread: the database work the stream thread must never
 * wait for, on a connection of its own (made and remade there): the
 * dead-letter rows, and every few seconds the slot's lag (and whether the
 * server invalidated it). A dead-letter job is retried until its row is
 * written or the thread stops; what was not written is not confirmed, so
 * the slot sends it again. */
#ifndef OBX_WINDOW_SIDE_H
#define OBX_WINDOW_SIDE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "event/event_row.h"
#include "host/relay_state.h"

typedef struct dead_job {
    uint64_t seq;   /* the event's place in the window */
    unsigned epoch; /* the window's: a job from before a reconnect finishes nothing */
    event_row *row;   /* owned by the job until written */
    unsigned attempt;
    uint64_t commit_lsn;
    char *error;
    struct dead_job *next;
} dead_job;

/* What the side thread does every few seconds on its session besides the
 * dead letters (NULL: WAL mode's slot check); it gets the session from
 * window_side_session when it needs one. */
typedef void (*side_upkeep)(void *arg, relay_state *st, PGconn **db);

typedef struct window_side {
    relay_state *st;
    side_upkeep upkeep;
    void *upkeep_arg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    dead_job *todo, *todo_tail; /* in submit order */
    dead_job *written;          /* for the stream thread (window_side_take) */
    long pending;               /* submitted, not yet taken back */
    int stop;
    long long upkeep_ms;
    long long parts_checked_ms; /* relay.partitions: when partitions ahead were last made */
} window_side;

void window_side_start(window_side *dw, relay_state *st, side_upkeep upkeep, void *upkeep_arg);

/* The side thread's session *db, made or remade when lost; NULL (err says
 * why) while the database cannot be reached. */
PGconn *window_side_session(PGconn **db, const relay_config *cfg, char *err, size_t err_size);

/* Stops and joins the thread; jobs not written are dropped (never confirmed). */
void window_side_stop(window_side *dw);

/* Queues the event's dead letter; takes row, copies error. */
void window_side_submit(window_side *dw, uint64_t seq, unsigned epoch, event_row *row, unsigned attempt,
                     uint64_t commit_lsn, const char *error);

/* The jobs written since the last call (their rows freed); the caller frees
 * the list with window_side_free_jobs. */
dead_job *window_side_take(window_side *dw);
/* Jobs submitted and not yet taken back. */
long window_side_pending(window_side *dw);
void window_side_free_jobs(dead_job *jobs);

#endif
