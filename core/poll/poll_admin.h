/* The operator's commands on the outbox table in poll mode: `status` (the
 * totals and the aggregates held back) and `requeue` (dead rows back to
 * pending). */
#ifndef OBX_POLL_ADMIN_H
#define OBX_POLL_ADMIN_H

#include <jansson.h>
#include <libpq-fe.h>

#include "config/config.h"

/* How many held-back heads are listed (the count covers all). */
#define STATUS_HELD_MAX_SQL "20"

/* Prints one report (or fills json when not NULL). Returns 0, or 1 when the database
 * cannot be read (said on stderr). */
int poll_command_status(PGconn *conn, const relay_config *cfg, json_t *json);

/* all, or the event ids in ids[0..count). Returns an exit code. */
int poll_command_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count);

#endif
