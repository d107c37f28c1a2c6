/* `status`: the outbox's totals and the aggregates held back, once or
 * refreshed every few seconds. */
#ifndef OBX_STATUS_CMD_H
#define OBX_STATUS_CMD_H

#include <stddef.h>

#include "config.h"

/* Prints the status of each source of cfgs, under its name when the config
 * lists sources (--json: one JSON object per source and report, with a
 * "source" key then). watch_seconds > 0 refreshes every that many seconds
 * until SIGINT or SIGTERM (then 0). Returns 0, or 1 when a database cannot
 * be read. */
int command_status(relay_config *const *cfgs, size_t count, int json, int watch_seconds);

#endif
