/* Cursor mode's retention of a partitioned outbox (relay.partitions.keep):
 * a partition past keep is dropped whole once every shard's cursor has
 * passed every row of it, never a row at a time. */
#ifndef OBX_CURSOR_PARTITIONS_H
#define OBX_CURSOR_PARTITIONS_H

#include <libpq-fe.h>

#include "config/config.h"

/* One pass on conn (a session of its own: it sets lock_timeout): each
 * partition past keep whose rows are all finished is closed to new rows,
 * detached concurrently and dropped. Returns -1 when the session is lost. */
int cursor_partitions_retire(PGconn *conn, const relay_config *cfg);

#endif
