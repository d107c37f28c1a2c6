/* WAL mode as a source (source.h): one thread streams the replication slot. */
#ifndef OBX_WAL_KIND_H
#define OBX_WAL_KIND_H

#include "host/source.h"

extern const source_kind wal_kind;

#endif
