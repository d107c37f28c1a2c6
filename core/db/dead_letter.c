#include "db/dead_letter.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db.h"
#include "db/pgarray.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
const char *const dead_letter_steps[] = {
    /* the event's columns keep the outbox's types so that requeue copies them back */
    "CREATE TABLE IF NOT EXISTS {schema}.{n._dead_letter} AS SELECT"
    " {c.event_id}, {c.aggregate_type}, {c.aggregate_id}, {c.event_type}, {c.payload},"
    " {c.headers}, {c.destination}, {c.created_at}, 0 AS dl_attempts, ''::text AS dl_error,"
    " now() AS dl_at, '0/0'::pg_lsn AS dl_commit_lsn FROM {table} WITH NO DATA",
    /* the fields of an event the typed columns refused, as a JSON object (wal_dead.c) */
    "ALTER TABLE {schema}.{n._dead_letter} ADD COLUMN IF NOT EXISTS dl_raw text",
    /* schema 3: requeued, an event keeps its version (its number is the next one) */
    "ALTER TABLE {schema}.{n._dead_letter} ADD COLUMN IF NOT EXISTS {c.event_version} text",
    ("CREATE UNIQUE INDEX IF NOT EXISTS {n._dead_letter_event}"
     " ON {schema}.{n._dead_letter} ({c.event_id})"),
};

/* A dead letter stored raw, or lacking a field every message needs, has
 * nothing to requeue (the outbox may refuse it, and the relay would): it
 * stays, and is counted. */
#define REQUEUABLE                                                                                \
    "dl_raw IS NULL AND {c.event_id} IS NOT NULL AND {c.aggregate_type} IS NOT NULL"             \
    " AND {c.aggregate_id} IS NOT NULL AND {c.event_type} IS NOT NULL AND {c.payload} IS NOT NULL"
#define CHOSEN "($1 OR {c.event_id} = ANY($2::uuid[]))"
static const char kept_sql[] =
    "SELECT count(*) FROM {schema}.{n._dead_letter} WHERE NOT (" REQUEUABLE ") AND " CHOSEN;
/* a row kept for audit under the same event_id goes first (WAL mode's
 * table may hold one; event_id is unique there) */
static const char delete_sql[] =
    "DELETE FROM {table} o USING {schema}.{n._dead_letter} d"
    " WHERE o.{c.event_id} = d.{c.event_id} AND ($1 OR d.{c.event_id} = ANY($2::uuid[]))";
static const char insert_sql[] =
    "WITH d AS (DELETE FROM {schema}.{n._dead_letter}"
    "   WHERE " REQUEUABLE " AND " CHOSEN " RETURNING *)"
    " INSERT INTO {table} ({c.event_id}, {c.aggregate_type}, {c.aggregate_id}, {c.event_type},"
    " {c.payload}, {c.headers}, {c.destination}, {c.created_at}, {c.event_version})"
    " SELECT coalesce({c.event_id}, gen_random_uuid()), {c.aggregate_type}, {c.aggregate_id},"
    " {c.event_type}, {c.payload}, {c.headers}, {c.destination},"
    " CASE WHEN $3 THEN clock_timestamp() ELSE {c.created_at} END, {c.event_version} FROM d"
    " ORDER BY dl_commit_lsn, dl_at";
/* clang-format on */

const size_t dead_letter_step_count = sizeof dead_letter_steps / sizeof dead_letter_steps[0];

long long dead_letter_requeue(PGconn *conn, const relay_config *cfg, int all, const char *ids_array,
                              int retired, long long *kept, char *err, size_t err_size)
{
    const char *params[] = {all ? "true" : "false", ids_array, retired ? "true" : "false"};
    const char *steps[] = {kept_sql, delete_sql, insert_sql};
    long long requeued = -1;
    for (int i = 0; i < 3; i++) {
        if (i == 1 && retired)
            continue;
        char *sql = sql_render(cfg, steps[i]);
        PGresult *res = PQexecParams(conn, sql, i == 2 ? 3 : 2, NULL, params, NULL, NULL, 0);
        free(sql);
        if (PQresultStatus(res) != (i == 0 ? PGRES_TUPLES_OK : PGRES_COMMAND_OK)) {
            db_error(conn, res, err, err_size);
            PQclear(res);
            return -1;
        }
        if (i == 0)
            *kept = atoll(PQgetvalue(res, 0, 0));
        else if (i == 2)
            requeued = atoll(PQcmdTuples(res));
        PQclear(res);
    }
    return requeued;
}

int dead_letter_requeue_command(PGconn *conn, const relay_config *cfg, int all, char **ids,
                                int count, requeue_fn fn)
{
    pgarray list;
    pgarray_init(&list);
    for (int i = 0; i < count; i++)
        pgarray_add(&list, ids[i], 1);
    char err[1024];
    long long kept = 0, n = -1;
    if (db_exec(conn, "BEGIN", err, sizeof err) == 0)
        n = fn(conn, cfg, all, pgarray_text(&list), &kept, err, sizeof err);
    if (n >= 0 && db_exec(conn, "COMMIT", err, sizeof err) < 0)
        n = -1;
    pgarray_free(&list);
    if (n < 0) {
        fprintf(stderr, "outbox-relay: requeue: %s\n", err);
        char ignored[256];
        db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
        return 1;
    }
    printf("requeued %lld dead events\n", n);
    if (kept > 0) {
        char dead[SQL_NAME_MAX + 1];
        sql_derived_name(cfg, "_dead_letter", dead, sizeof dead);
        printf("kept %lld dead events: stored raw (dl_raw), or with a NULL event_id, "
               "aggregate_type, aggregate_id, event_type or payload; fix them in %s.%s first\n",
               kept, cfg->schema, dead);
    }
    return 0;
}
