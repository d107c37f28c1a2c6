/* `purge` in poll mode: dead rows of the outbox table (dead_at set, never
 * published), and of a partitioned outbox's dead-letter table, selected and
 * locked, then deleted by key. */
#ifndef OBX_POLL_PURGE_H
#define OBX_POLL_PURGE_H

#include <libpq-fe.h>

#include "config/config.h"

/* The source hooks (source.h). */
PGresult *poll_purge_select(PGconn *conn, const relay_config *cfg, const char *ids_array,
                            const char *older_than, int *bad_input, char *err, size_t err_size);
long long poll_purge_delete(PGconn *conn, const relay_config *cfg, const char *keys_array,
                            char *err, size_t err_size);

#endif
