#include "poll/poll_purge.h"

#include <stdlib.h>

#include "db/partitions.h"
#include "db/sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Dead and never published: a pending or published row is never selected.
 * Locked, so a requeue waits for the purge (and then finds nothing). A key
 * is 'o' and the row's id. */
#define SELECT_ROWS                                                                               \
    "SELECT 'o' || {c.id}, {c.event_id}::text, {c.event_type}, {c.aggregate_type},"              \
    " coalesce({c.last_error}, '') FROM {table}"                                                 \
    " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL"                                \
    " AND ($1::uuid[] IS NULL OR {c.event_id} = ANY($1::uuid[]))"                                \
    " AND ($2::interval IS NULL OR {c.dead_at} < now() - $2::interval)"                          \
    " ORDER BY {c.id} FOR UPDATE"
static const char select_sql[] = SELECT_ROWS;
/* A partitioned outbox's retired partitions moved their dead rows to the
 * dead-letter table: those too, keyed 'd' and their ctid (which stays the
 * row's while it is locked). */
static const char select_partitioned_sql[] =
    "WITH o AS (" SELECT_ROWS "),"
    " d AS (SELECT 'd' || ctid::text, {c.event_id}::text, {c.event_type}, {c.aggregate_type},"
    "  coalesce(dl_error, '') FROM {schema}.{n._dead_letter}"
    "  WHERE ($1::uuid[] IS NULL OR {c.event_id} = ANY($1::uuid[]))"
    "  AND ($2::interval IS NULL OR dl_at < now() - $2::interval) ORDER BY dl_at, ctid FOR UPDATE)"
    " SELECT * FROM o UNION ALL SELECT * FROM d";

#define DELETE_ROWS                                                                               \
    "DELETE FROM {table} WHERE {c.id} = ANY(SELECT substr(k, 2)::bigint FROM unnest($1::text[]) k"\
    " WHERE k LIKE 'o%') AND {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL RETURNING 1"
static const char delete_sql[] = "WITH o AS (" DELETE_ROWS ") SELECT count(*) FROM o";
static const char delete_partitioned_sql[] =
    "WITH o AS (" DELETE_ROWS "),"
    " d AS (DELETE FROM {schema}.{n._dead_letter} WHERE ctid = ANY(SELECT substr(k, 2)::tid"
    "  FROM unnest($1::text[]) k WHERE k LIKE 'd%') RETURNING 1)"
    " SELECT (SELECT count(*) FROM o) + (SELECT count(*) FROM d)";
/* clang-format on */

PGresult *poll_purge_select(PGconn *conn, const relay_config *cfg, const char *ids_array,
                            const char *older_than, int *bad_input, char *err, size_t err_size)
{
    const char *params[] = {ids_array, older_than};
    return sql_run(conn, cfg, partitions_on(cfg) ? select_partitioned_sql : select_sql, 2, params,
                   PGRES_TUPLES_OK, bad_input, err, err_size);
}

long long poll_purge_delete(PGconn *conn, const relay_config *cfg, const char *keys_array,
                            char *err, size_t err_size)
{
    const char *params[] = {keys_array};
    PGresult *res = sql_run(conn, cfg, partitions_on(cfg) ? delete_partitioned_sql : delete_sql, 1,
                            params, PGRES_TUPLES_OK, NULL, err, err_size);
    long long n = res ? atoll(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    return n;
}
