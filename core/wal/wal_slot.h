/* WAL mode's replication slot seen from beside the stream: its lag, whether
 * the server invalidated it, and `status`. */
#ifndef OBX_WAL_SLOT_H
#define OBX_WAL_SLOT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdatomic.h>

#include "config/config.h"
#include "host/relay_state.h"

/* What the slot check learns on the window's side thread. */
typedef struct wal_slot_watch {
    int lag_warned;
    atomic_int lost; /* the server invalidated the slot: the relay cannot go on */
} wal_slot_watch;

/* The slot's lag: WAL bytes held past the confirmed position, and whether
 * the slot is lost. Returns 0 (lost set to 1 when invalidated), 1 when the
 * slot does not exist, -1 with err. */
int wal_slot_lag(PGconn *conn, const relay_config *cfg, long long *bytes, int *lost, char *err,
                 size_t err_size);
/* The side thread's upkeep (arg: a wal_slot_watch): the lag into
 * relay_state, a warning past lag_warn_mb, lost set on an invalidated slot. */
void wal_slot_upkeep(void *arg, relay_state *st, PGconn **db);
/* `status` in WAL mode; returns 0 or 1. */
int wal_command_status(PGconn *conn, const relay_config *cfg, json_t *json);

#endif
