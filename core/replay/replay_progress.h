/* A replay's progress, kept in a small table the command creates in the
 * config's schema (outbox_relay_replay): per name its arguments, its window
 * as resolved at the first start, and the id through which every selected
 * event was acknowledged by the broker (or given up). A second run with the
 * same name goes on from there. */
#ifndef OBX_REPLAY_PROGRESS_H
#define OBX_REPLAY_PROGRESS_H

#include <libpq-fe.h>

#include "config/config.h"

typedef struct replay_progress {
    char name[128];
    char since[64], until[64];  /* timestamptz texts */
    long long max_id;           /* the newest row at the first start */
    long long done_through;     /* every selected event up to this id is done */
    long long replayed, failed; /* acknowledged, given up (up to done_through) */
    int finished;
} replay_progress;

/* Creates the table if needed, then starts the replay `name` (NULL: one
 * named after args) or takes up the one of that name. since and until
 * (NULL: now) are parsed by PostgreSQL. Returns 0; 2 with err for a bad
 * time or a name used with other arguments; 1 with err otherwise. */
int replay_progress_begin(PGconn *conn, const relay_config *cfg, const char *name, const char *args,
                          const char *since, const char *until, replay_progress *p, char *err,
                          size_t err_size);

/* Writes p's done_through, counts and finished. Returns 0 or -1 with err. */
int replay_progress_save(PGconn *conn, const relay_config *cfg, const replay_progress *p, char *err,
                         size_t err_size);

#endif
