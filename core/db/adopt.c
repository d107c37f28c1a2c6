#include "db/adopt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "db/db.h"
#include "db/sql.h"
#include "db/sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
/* $1 schema, $2 table, $3 the order column: whether the table exists, and
 * the order column's type if it has one. */
static const char table_sql[] =
    "SELECT c.oid IS NOT NULL, (SELECT pg_catalog.format_type(a.atttypid, NULL)"
    "  FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attname = $3"
    "  AND NOT a.attisdropped)"
    " FROM (SELECT (SELECT t.oid FROM pg_catalog.pg_class t"
    "  JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace"
    "  WHERE n.nspname = $1 AND t.relname = $2) AS oid) c";
/* clang-format on */

/* The order column is the relay's own: a bigint it numbers. A mapping that
 * gives its name to another role, or to a column of another type (the
 * uuid `id` of Debezium's table), would leave the application's inserts
 * without a value for it. */
static int refuse_order_column(const relay_config *cfg, const char *type, char *why,
                               size_t why_size)
{
#define SAME_AS_ORDER(name)                                                                        \
    if (strcmp(#name, "id") != 0 && !strcmp(cfg->col.name, cfg->col.id))                           \
        return snprintf(why, why_size,                                                             \
                        "database.columns maps " #name " to \"%s\", the relay's order column "     \
                        "(id), which the relay numbers itself: map id to a new column, e.g. "      \
                        "columns = { id = \"relay_id\"; }",                                        \
                        cfg->col.id),                                                              \
               -1;
    CFG_COLUMNS(SAME_AS_ORDER)
#undef SAME_AS_ORDER
    if (type && strcmp(type, "bigint") != 0 && strcmp(type, "integer") != 0)
        return snprintf(why, why_size,
                        "column \"%s\" of %s.%s is %s, and the relay's order column (id) must be "
                        "a bigint it numbers: map id to a new column, e.g. columns = { id = "
                        "\"relay_id\"; }",
                        cfg->col.id, cfg->schema, cfg->table, type),
               -1;
    return 0;
}

/* One boolean query, with param as $1 unless NULL; -1 with why on failure. */
static int ask(PGconn *conn, const relay_config *cfg, const char *tmpl, const char *param,
               char *why, size_t why_size)
{
    PGresult *res =
        sql_run(conn, cfg, tmpl, param != NULL, &param, PGRES_TUPLES_OK, NULL, why, why_size);
    int rc = res ? PQgetvalue(res, 0, 0)[0] == 't' : -1;
    PQclear(res);
    return rc;
}

/* 1 when the table holds rows and init-db never set it up, 0 if not. */
static int unadopted_rows(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    int rows = ask(conn, cfg, "SELECT EXISTS (SELECT 1 FROM {table})", NULL, why, why_size);
    if (rows <= 0)
        return rows;
    int registry = ask(conn, cfg,
                       "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class t"
                       " JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace"
                       " WHERE n.nspname = $1 AND t.relname = 'outbox_relay_schema')",
                       cfg->schema, why, why_size);
    if (registry <= 0)
        return registry < 0 ? -1 : 1;
    char key[2 * SQL_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s.%s", cfg->schema, cfg->table);
    return ask(conn, cfg,
               "SELECT NOT EXISTS (SELECT 1 FROM {schema}.outbox_relay_schema"
               " WHERE table_name = $1)",
               key, why, why_size);
}

int adopt_check(PGconn *conn, const relay_config *cfg, adopt_from from, int *mark_now, char *why,
                size_t why_size)
{
    *mark_now = 0;
    const char *params[] = {cfg->schema, cfg->table, cfg->col.id};
    PGresult *res = PQexecParams(conn, table_sql, 3, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, why, why_size);
        PQclear(res);
        return -1;
    }
    int exists = PQgetvalue(res, 0, 0)[0] == 't';
    int rc = refuse_order_column(cfg, PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1), why,
                                 why_size);
    PQclear(res);
    if (rc < 0 || !exists)
        return rc;
    rc = unadopted_rows(conn, cfg, why, why_size);
    if (rc <= 0)
        return rc;
    if (from == ADOPT_ASK)
        return snprintf(why, why_size,
                        "%s.%s already holds rows and init-db never set it up: say what they "
                        "are with --from now (marked published: only rows written from now on "
                        "are sent) or --from beginning (every one of them is sent)",
                        cfg->schema, cfg->table),
               -1;
    *mark_now = from == ADOPT_FROM_NOW;
    return 0;
}

int adopt_mark_published(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    char *sql = sql_render(cfg, "UPDATE {table} SET {c.published_at} = now()"
                                " WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL");
    if (db_script()) {
        int rc = db_exec(conn, sql, why, why_size);
        free(sql);
        return rc;
    }
    PGresult *res = PQexec(conn, sql);
    free(sql);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc < 0)
        db_error(conn, res, why, why_size);
    else
        log_info("init-db --from now: %s rows already in %s.%s marked published", PQcmdTuples(res),
                 cfg->schema, cfg->table);
    PQclear(res);
    return rc;
}
