/* Fan-out: a route whose output is a list (output = ["a", "b"]). Each
 * target keeps its own delivery state by having its own outbox: the source
 * copies each such event, once, into a table per target (<table>_to_<output>,
 * made by init-db) through the internal output FANOUT_OUTPUT (the fanout
 * driver), and a poll source per target (<source>.<output>) relays that
 * table to its output alone, with the route's destination, shaping and dead
 * letters. So a target that is down or refusing retries and dead-letters on
 * its own while the others get each event once, in order per aggregate. */
#ifndef OBX_CONFIG_FANOUT_H
#define OBX_CONFIG_FANOUT_H

#include <stddef.h>

#include "config/config.h"

#define FANOUT_OUTPUT "_fanout"

/* The outputs cfg's fan-out routes name, each once, in order of first
 * mention (targets: room for cfg->output_count); how many. */
size_t fanout_targets(const relay_config *cfg, const char **targets);

/* Makes d, a fresh load of cfg's source, the relay of target's table. -1
 * with err when the table's name would be too long. */
int fanout_make_target(relay_config *d, const char *source, const char *target, char *err,
                       size_t err_size);

/* Routes cfg's fan-out routes to FANOUT_OUTPUT (destination: the targets,
 * comma-separated). -1 with err when cfg has an output of that name. */
int fanout_make_source(relay_config *cfg, char *err, size_t err_size);

#endif
