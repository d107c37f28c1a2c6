/* A partitioned outbox's upkeep, one pass of the cleanup thread: partitions
 * made ahead, fully published ones past relay.partitions.keep dropped. */
#ifndef OBX_PARTITION_UPKEEP_H
#define OBX_PARTITION_UPKEEP_H

#include <libpq-fe.h>

#include "config/config.h"
#include "db/lock_holder.h"

/* One pass on conn (a session of its own: it sets lock_timeout). Logs what
 * it made, dropped and kept, and notes in squats a holder of the partitions'
 * lock that is no relay. Returns -1 with err when the session failed. */
int partition_upkeep(PGconn *conn, const relay_config *cfg, lock_squats *squats, char *err,
                     size_t err_size);

#endif
