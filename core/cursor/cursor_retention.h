/* Cursor mode's retention: no row is written when published, so rows the
 * cursor has passed are deleted in ranges, on the side thread's session:
 * at once with retention = "delete", after retention_hours with "mark"
 * (0: kept). A partitioned outbox is kept a partition at a time
 * (cursor_partitions.h). */
#ifndef OBX_CURSOR_RETENTION_H
#define OBX_CURSOR_RETENTION_H

#include <libpq-fe.h>

#include "host/relay_state.h"

/* window_side's upkeep: one round of deletes when due. */
void cursor_retention_upkeep(void *arg, relay_state *st, PGconn **db);

#endif
