/* A worker's database session: connect with backoff, prepare the engine's
 * statements, LISTEN for new rows while idle (idle_wait.c waits for them), run
 * statements, and be cancelled from another thread when a stop must not wait
 * for PostgreSQL. */
#ifndef OBX_SESSION_H
#define OBX_SESSION_H

#include <libpq-fe.h>
#include <pthread.h>

#include "host/relay_state.h"

typedef struct session {
    relay_state *st;
    const char *scope; /* "worker N", for the log */
    const char *payload_type;
    PGconn *conn;       /* NULL while disconnected */
    int in_transaction; /* a claim's transaction is open (its locks are the lease) */
    int listening;      /* LISTENs on the outbox's channel */
    int backoff_ms;     /* the wait after the next failed connect (0: none failed yet) */
    long long retry_at; /* no connect before this (ms, monotonic) */

    pthread_mutex_t lock; /* guards cancel and running (read by the engine's thread) */
    PGcancel *cancel;
    int running; /* a SESSION_* statement is running */

    /* Called about every 100 ms while a statement waits for its result: a
     * worker keeps its other sessions' transactions from idling past the
     * lease meanwhile. NULL: the statement simply blocks. */
    void (*while_waiting)(void *arg);
    void *while_waiting_arg;
} session;

enum { SESSION_IDLE, SESSION_CLAIM, SESSION_OTHER };

void session_init(session *s, relay_state *st, const char *scope, const char *payload_type);
void session_free(session *s);

/* Connects and prepares; retries with backoff until the deadline
 * (ms, monotonic) passes, or, with honour_stop, a stop is requested (whose
 * cancel of claims then also cancels the prepares, which may wait for a
 * table lock). The backoff outlives the call: a caller that tries once per
 * loop (a deadline of now) makes an attempt, and logs it, only when the
 * backoff since the last failed one has passed. */
int session_connect(session *s, long long deadline, int honour_stop);
void session_disconnect(session *s);

/* LISTEN (on, outside a claim's transaction) or UNLISTEN (in one too: from
 * its commit on). A listening session's
 * backend is woken, and runs a transaction, for every notifying commit:
 * only a worker with nothing to do listens. 0, or -1 (logged). */
int session_listen(session *s, int on);

/* Runs a prepared statement (kind: SESSION_CLAIM or SESSION_OTHER). Returns
 * the result, or NULL after logging why (and dropping a lost connection). */
PGresult *session_run(session *s, int kind, const char *stmt, int nparams,
                      const char *const *params, ExecStatusType want);

/* Runs a prepared statement without calling while_waiting (for what that
 * callback itself runs). */
PGresult *session_run_plain(session *s, int kind, const char *stmt, int nparams,
                            const char *const *params, ExecStatusType want);

/* Outside a transaction: reads what the server sent without waiting; 1 when
 * a NOTIFY (new rows) came since the last call, 0 when none, -1 when the
 * connection is gone. Notifications are delivered between transactions. */
int session_notified(session *s);

/* The claim's transaction. A commit that fails (the session lost, or ended
 * by PostgreSQL) leaves the outcome unknown. The rollback is a no-op
 * outside a transaction. */
int session_begin(session *s);
int session_commit(session *s);
void session_rollback(session *s);

/* From any thread: cancels the running statement when it is of `kind`
 * (SESSION_OTHER: any). */
void session_cancel(session *s, int kind);

#endif
