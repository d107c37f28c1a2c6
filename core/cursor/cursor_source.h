/* Cursor mode's reader thread: rows read in the cursor's order into WAL
 * mode's window, published through the delivery core, the cursor moved past
 * what is finished. */
#ifndef OBX_CURSOR_SOURCE_H
#define OBX_CURSOR_SOURCE_H

#include <libpq-fe.h>

#include "host/relay_state.h"

/* `run`'s check: the cursor's objects are there. 0 or -1 (logged). */
int cursor_preflight(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                   size_t err_size);

/* Reads and publishes until stopped (or drained with --drain). */
void cursor_run(relay_state *st);

#endif
