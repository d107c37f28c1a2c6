/* `status`: the outbox's totals and the aggregates held back, once or
 * refreshed every few seconds. */
#ifndef OBX_STATUS_CMD_H
#define OBX_STATUS_CMD_H

#include "config.h"

/* Prints the status (--json: one JSON object per report). watch_seconds >
 * 0 refreshes every that many seconds until SIGINT or SIGTERM (then 0).
 * Returns 0, or 1 when the database cannot be read. */
int command_status(const relay_config *cfg, int json, int watch_seconds);

#endif
