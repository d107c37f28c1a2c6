/* Cursor mode's part of init-db and its check at start: the column that
 * orders the outbox for the cursor, the order trigger that stamps it, the
 * index the reader walks, the cursor's table and the dead-letter table. */
#ifndef OBX_CURSOR_SCHEMA_H
#define OBX_CURSOR_SCHEMA_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"

/* source_kind.install; reset_slot is not cursor mode's (refused before). */
int cursor_schema_install(PGconn *conn, const relay_config *cfg, int reset_slot, char *err,
                          size_t err_size);

/* Are cursor mode's objects there and current? 0, or -1 with err. */
int cursor_schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

#endif
