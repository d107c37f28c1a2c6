/* Cursor mode's reader thread: rows read in the cursor's order into WAL
 * mode's window, published through the delivery core, the cursor moved past
 * what is finished. */
#ifndef OBX_CURSOR_SOURCE_H
#define OBX_CURSOR_SOURCE_H

#include "relay_state.h"

/* `run`'s check: the cursor's objects are there. 0 or -1 (logged). */
int cursor_preflight(const relay_config *cfg);

/* Reads and publishes until stopped (or drained with --drain). */
void cursor_run(relay_state *st);

#endif
