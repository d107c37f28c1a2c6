/* A partitioned outbox's upkeep, one pass of the cleanup thread: partitions
 * made ahead, fully published ones past relay.partitions.keep dropped. */
#ifndef OBX_PARTITION_UPKEEP_H
#define OBX_PARTITION_UPKEEP_H

#include <libpq-fe.h>

#include "config/config.h"

/* One pass on conn (a session of its own: it sets lock_timeout). Logs what
 * it made, dropped and kept. Returns -1 with err when the session failed. */
int partition_upkeep(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

#endif
