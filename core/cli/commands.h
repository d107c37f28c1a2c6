/* The database commands: init-db, requeue, pause and resume (status:
 * status_cmd.h, purge: purge_cmd.h), and what every command does first.
 * Each returns an exit code. */
#ifndef OBX_COMMANDS_H
#define OBX_COMMANDS_H

#include <libpq-fe.h>

#include "config/config.h"
#include "db/adopt.h"

/* Loads the config at path (NULL: says -c is missing), of its source named
 * outbox (NULL: its only one), and sets the log up from it; NULL after saying
 * why on stderr. */
relay_config *command_load_config(const char *path, const char *outbox, const char *command);
/* Every source of the config (only the one outbox names, when not NULL), its
 * log set up; NULL (said on stderr) when it cannot be loaded. */
relay_config **command_load_all(const char *path, const char *outbox, const char *command,
                                size_t *count);
/* A session, or NULL after saying why on stderr. */
PGconn *command_connect(const relay_config *cfg);

typedef struct init_db_options {
    int reset_slot; /* WAL mode: drop and re-create the replication slot */
    int inbox;      /* also the consumer inbox (inbox.h) */
    int print_sql;  /* write the SQL it would run, and change nothing */
    adopt_from from;
} init_db_options;
int command_init_db(const relay_config *cfg, const init_db_options *o);
/* The schema and the source's tables are there: 1; else 0 with one line
 * in err that says to run init-db. */
int command_installed(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);
/* all, or the event ids in ids[0..count) */
int command_requeue(const relay_config *cfg, int all, char **ids, int count);
/* pause (1) or resume (0) an output by name, or the whole source (control.h) */
int command_pause(const relay_config *cfg, int pause, const char *output, int source,
                  const char *reason);

#endif
