/* WAL mode as a source (source.h): one thread streams the replication slot. */
#ifndef OBX_WAL_OPS_H
#define OBX_WAL_OPS_H

#include "source.h"

extern const source_ops wal_ops;

#endif
