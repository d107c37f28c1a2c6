#include "window/dead_purge.h"

#include <stdlib.h>

#include "db/sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Every row of the table is a dead event; the lock makes a requeue (which
 * deletes the row it moves back) wait for the purge. A ctid stays the row's
 * while it is locked. */
static const char select_sql[] =
    "SELECT ctid::text, {c.event_id}::text, {c.event_type}, {c.aggregate_type}, dl_error"
    " FROM {schema}.{n._dead_letter}"
    " WHERE ($1::uuid[] IS NULL OR {c.event_id} = ANY($1::uuid[]))"
    " AND ($2::interval IS NULL OR dl_at < now() - $2::interval)"
    " ORDER BY dl_at, ctid FOR UPDATE";

static const char delete_sql[] =
    "WITH d AS (DELETE FROM {schema}.{n._dead_letter} WHERE ctid = ANY($1::tid[]) RETURNING 1)"
    " SELECT count(*) FROM d";
/* clang-format on */

PGresult *dead_table_purge_select(PGconn *conn, const relay_config *cfg, const char *ids_array,
                           const char *older_than, int *bad_input, char *err, size_t err_size)
{
    const char *params[] = {ids_array, older_than};
    return sql_run(conn, cfg, select_sql, 2, params, PGRES_TUPLES_OK, bad_input, err, err_size);
}

long long dead_table_purge_delete(PGconn *conn, const relay_config *cfg, const char *keys_array, char *err,
                           size_t err_size)
{
    const char *params[] = {keys_array};
    PGresult *res = sql_run(conn, cfg, delete_sql, 1, params, PGRES_TUPLES_OK, NULL, err, err_size);
    long long n = res ? atoll(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    return n;
}
