/* status, per output (poll mode): its events waiting, those failing (with
 * the newest error), and how many it published in the last minute; the
 * rows are grouped by event and aggregate type in SQL and routed here as
 * the relay routes them. */
#ifndef OBX_POLL_OUTPUTS_H
#define OBX_POLL_OUTPUTS_H

#include <jansson.h>
#include <libpq-fe.h>

#include "config/config.h"

/* The per-output figures: printed (json NULL) or set as json's "outputs"
 * array. Returns 0, or -1 after printing the error. */
int poll_outputs_status(PGconn *conn, const relay_config *cfg, json_t *json);

#endif
