/* Sends a replay's events again through the delivery core (message
 * building, routes, the drivers, the settle decision under the retry
 * policy), as `run` does, with no write to the rows: per aggregate one
 * event at a time in id order, at most `rate` events a second, and the
 * progress kept (replay_progress.h) only up to the events acknowledged. */
#ifndef OBX_REPLAY_SEND_H
#define OBX_REPLAY_SEND_H

#include <libpq-fe.h>
#include <signal.h>

#include "host/relay_state.h"
#include "replay/replay_progress.h"
#include "replay/replay_read.h"

typedef struct replay_opts {
    long to_output;              /* every event to this output; -1: its route's */
    const unsigned char *routes; /* routes[i]: route i + 1 is replayed; NULL: every route */
    double rate;                 /* events a second */
    long long total;             /* events selected at the start, for the progress line */
    volatile sig_atomic_t
        *stop; /* set by SIGINT/SIGTERM: finish what is in flight, keep the rest */
} replay_opts;

/* Runs the replay from p->done_through on, reading on conn; saves the
 * progress every 100 ms and at the end. Returns 0 when every event was
 * sent, 1 when stopped or on a database error (progress saved as far as it
 * got). skipped: events whose route --route left out. */
int replay_send(relay_state *st, PGconn *conn, const replay_filter *f, replay_progress *p,
                const replay_opts *o, long long *skipped);

#endif
