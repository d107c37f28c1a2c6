/* WAL mode: the relay's second source. One thread streams the slot, feeds
 * the window, publishes, and confirms to the slot the commit up to which
 * every event is acknowledged or dead-lettered. A second process on the
 * same slot waits as a hot standby and takes over when the first dies. */
#ifndef OBX_WAL_SOURCE_H
#define OBX_WAL_SOURCE_H

#include <libpq-fe.h>

#include "host/relay_state.h"

/* Before `run`: the server allows WAL mode and the slot is usable. */
int wal_preflight(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                   size_t err_size);

/* Runs until stopped or drained; sets st->failed on a fatal error (a lost
 * slot, drivers that cannot be created). */
void wal_run(relay_state *st);

#endif
