/* `status`: the outbox's totals and the aggregates held back, once or
 * refreshed every few seconds. */
#ifndef OBX_STATUS_CMD_H
#define OBX_STATUS_CMD_H

#include <stddef.h>

#include "config/config.h"

/* How many dead events status lists without --dead. */
#define STATUS_DEAD_LISTED 10

/* Prints the status of each source of cfgs, under its name when the config
 * lists sources (--json: one JSON object per source and report, with a
 * "source" key then), with its first `dead` dead events, oldest first (0:
 * none listed). watch_seconds > 0 refreshes every that many seconds until
 * SIGINT or SIGTERM (then 0). Returns 0, or 1 when a database cannot be
 * read or has no schema (one line: run init-db). */
int command_status(relay_config *const *cfgs, size_t count, int json, int watch_seconds,
                   int dead);

#endif
