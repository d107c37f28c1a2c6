/* WAL mode as a source (source.h): one thread streams the replication slot. */
#ifndef OBX_WAL_OPS_H
#define OBX_WAL_OPS_H

#include "source.h"

extern const source_ops wal_ops;

/* source_ops.dead_events of a source whose dead events are all in the
 * dead-letter table (WAL and cursor mode). */
extern const char wal_dead_events_sql[];

#endif
