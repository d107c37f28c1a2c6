#include "poll_purge.h"

#include <stdlib.h>

#include "sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Dead and never published: a pending or published row is never selected.
 * Locked, so a requeue waits for the purge (and then finds nothing). */
static const char select_sql[] =
    "SELECT {c.id}::text, {c.event_id}::text, {c.event_type}, {c.aggregate_type},"
    " coalesce({c.last_error}, '') FROM {table}"
    " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL"
    " AND ($1::uuid[] IS NULL OR {c.event_id} = ANY($1::uuid[]))"
    " AND ($2::interval IS NULL OR {c.dead_at} < now() - $2::interval)"
    " ORDER BY {c.id} FOR UPDATE";

static const char delete_sql[] =
    "WITH d AS (DELETE FROM {table} WHERE {c.id} = ANY($1::bigint[])"
    " AND {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL RETURNING 1)"
    " SELECT count(*) FROM d";
/* clang-format on */

PGresult *poll_purge_select(PGconn *conn, const relay_config *cfg, const char *ids_array,
                            const char *older_than, int *bad_input, char *err, size_t err_size)
{
    const char *params[] = {ids_array, older_than};
    return sql_run(conn, cfg, select_sql, 2, params, PGRES_TUPLES_OK, bad_input, err, err_size);
}

long long poll_purge_delete(PGconn *conn, const relay_config *cfg, const char *keys_array,
                            char *err, size_t err_size)
{
    const char *params[] = {keys_array};
    PGresult *res = sql_run(conn, cfg, delete_sql, 1, params, PGRES_TUPLES_OK, NULL, err, err_size);
    long long n = res ? atoll(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    return n;
}
