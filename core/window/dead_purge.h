/* `purge` in WAL mode: rows of the dead-letter table, selected and locked,
 * then deleted by their place (ctid: a row stored raw has no event_id). */
#ifndef OBX_DEAD_PURGE_H
#define OBX_DEAD_PURGE_H

#include <libpq-fe.h>

#include "config/config.h"

/* The source hooks (source.h). */
PGresult *dead_table_purge_select(PGconn *conn, const relay_config *cfg, const char *ids_array,
                           const char *older_than, int *bad_input, char *err, size_t err_size);
long long dead_table_purge_delete(PGconn *conn, const relay_config *cfg, const char *keys_array, char *err,
                           size_t err_size);

#endif
