#include "db/own_tables.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db.h"
#include "db/pgarray.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
const char *const own_tables_steps[] = {
    /* operator control (ops/control.c): what is paused, per outbox table */
    "CREATE TABLE IF NOT EXISTS {schema}." OWN_CONTROL_TABLE " ("
    " table_name text NOT NULL, scope text NOT NULL CHECK (scope IN ('source', 'output')),"
    " name text NOT NULL, paused_at timestamptz NOT NULL DEFAULT now(),"
    " paused_by text NOT NULL DEFAULT current_user, reason text,"
    " PRIMARY KEY (table_name, scope, name))",
    /* replay's progress (replay/replay_progress.c), one row per replay */
    "CREATE TABLE IF NOT EXISTS {schema}." OWN_REPLAY_TABLE " (name text PRIMARY KEY,"
    " args text NOT NULL, since timestamptz NOT NULL, until timestamptz NOT NULL,"
    " max_id bigint NOT NULL, done_through bigint NOT NULL DEFAULT 0,"
    " replayed bigint NOT NULL DEFAULT 0, failed bigint NOT NULL DEFAULT 0,"
    " started_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),"
    " finished_at timestamptz)",
};

/* $1 schema, $2 outbox table, $3 names: how many exist, and the first that
 * is not a table of the outbox's owner (its kind and owner, the owner's). */
static const char check_sql[] =
    "WITH s AS (SELECT oid FROM pg_namespace WHERE nspname = $1),"
    " o AS (SELECT coalesce((SELECT t.relowner FROM pg_class t, s"
    "   WHERE t.relnamespace = s.oid AND t.relname = $2),"
    "   (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)) AS owner),"
    " c AS (SELECT c.relname, c.relkind, c.relowner FROM pg_class c, s"
    "   WHERE c.relnamespace = s.oid AND c.relname = ANY ($3::text[]))"
    " SELECT (SELECT count(*) FROM c), b.relname, CASE b.relkind WHEN 'r' THEN 'a table'"
    "  WHEN 'p' THEN 'a partitioned table' WHEN 'v' THEN 'a view'"
    "  WHEN 'm' THEN 'a materialized view' WHEN 'f' THEN 'a foreign table'"
    "  ELSE 'a relation of kind ' || b.relkind::text END,"
    "  pg_get_userbyid(b.relowner), pg_get_userbyid(o.owner)"
    " FROM o LEFT JOIN LATERAL (SELECT * FROM c WHERE c.relkind <> 'r' OR c.relowner <> o.owner"
    "  ORDER BY c.relname LIMIT 1) b ON true";
/* clang-format on */

const size_t own_tables_step_count = sizeof own_tables_steps / sizeof own_tables_steps[0];

int own_tables_check(PGconn *conn, const relay_config *cfg, const char *const *names, char *why,
                     size_t why_size)
{
    pgarray a;
    pgarray_init(&a);
    for (const char *const *n = names; *n; n++)
        pgarray_add(&a, *n, 1);
    const char *params[] = {cfg->schema, cfg->table, pgarray_text(&a)};
    PGresult *res = PQexecParams(conn, check_sql, 3, NULL, params, NULL, NULL, 0);
    pgarray_free(&a);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        db_error(conn, res, why, why_size);
    else if (!PQgetisnull(res, 0, 1)) {
        rc = OWN_REFUSED;
        snprintf(why, why_size,
                 "%s.%s is %s owned by \"%s\", not a table of \"%s\" (the outbox's owner): a "
                 "role that may create in schema %s made it, and the relay does not read it "
                 "(it could run that role's code); drop it, then run `outbox-relay init-db -c %s`",
                 cfg->schema, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3),
                 PQgetvalue(res, 0, 4), cfg->schema, cfg->path);
    } else
        rc = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

int own_tables_check_all(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    static const char *const suffixes[] = {"_dead_forwarded", "_aggregate_seq", "_idempotency",
                                           "_dead_letter", "_cursor"};
    enum { N = sizeof suffixes / sizeof suffixes[0] };
    char derived[N][SQL_NAME_MAX + 1];
    const char *names[N + 4] = {OWN_SCHEMA_TABLE, OWN_CONTROL_TABLE, OWN_REPLAY_TABLE};
    for (size_t i = 0; i < N; i++) {
        sql_derived_name(cfg, suffixes[i], derived[i], sizeof derived[i]);
        names[3 + i] = derived[i];
    }
    names[N + 3] = NULL;
    return own_tables_check(conn, cfg, names, why, why_size) < 0 ? -1 : 0;
}

int own_table_ready(PGconn *conn, const relay_config *cfg, const char *name, char *why,
                    size_t why_size)
{
    const char *names[] = {name, NULL};
    return own_tables_check(conn, cfg, names, why, why_size);
}
