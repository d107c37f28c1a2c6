/* WAL mode's objects, made by init-db: the publication (inserts only), the
 * logical slot (pgoutput), the dead-letter table and outbox_emit(). */
#ifndef OBX_WAL_SCHEMA_H
#define OBX_WAL_SCHEMA_H

#include <libpq-fe.h>

#include "config/config.h"

/* wal_level, the REPLICATION attribute, slots allowed. Returns 0, or -1
 * with what is missing and how to fix it in err. */
int wal_prerequisites(PGconn *conn, char *err, size_t err_size);

/* Creates or updates WAL mode's objects (after the poll schema exists);
 * with reset_slot, drops and re-creates the slot. Returns 0 or -1 with err. */
int wal_schema_install(PGconn *conn, const relay_config *cfg, int reset_slot, char *err,
                       size_t err_size);

/* Before `run`: the prerequisites, and the slot exists and is not lost. */
int wal_schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

/* The slot's wal_status and active server pid (0: none). Returns 0, 1 when
 * it does not exist (err says to run init-db), -1 with err. */
int wal_slot_state(PGconn *conn, const relay_config *cfg, char *wal_status, size_t status_size,
                   int *active_pid, char *err, size_t err_size);

#endif
