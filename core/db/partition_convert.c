#include "db/partition_convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/sql.h"

/* The old table's relay indexes and key, renamed out of the way of the new
 * parent's: the parent's CREATE INDEX then finds each index by its
 * definition and attaches it instead of building it. */
static const char *const kept_indexes[][2] = {
    {"_pending", "_p_before_pending"},
    {"_aggregate_live", "_p_before_aggregate_live"},
    {"_aggregate_dead", "_p_before_aggregate_dead"},
    {"_published", "_p_before_published"},
    {"_dead", "_p_before_dead"},
    {"_event_id", "_p_before_event_id_unique"},
    /* (renaming a key's index renames the key) */
    {"_pkey", "_p_before_pkey"},
};

/* SQL text reads best as written. */
/* clang-format off */
/* Before the lock, while writes go on: the bound every row (and every row
 * written until the conversion) keeps, checked by VALIDATE under SHARE
 * UPDATE EXCLUSIVE, so that ATTACH need not scan; the new key and the
 * plain event_id index built concurrently. $BOUND$ is the bound literal. */
static const char *const before_steps[] = {
    "ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {n._p_before_bound}",
    "ALTER TABLE {table} ADD CONSTRAINT {n._p_before_bound}"
    " CHECK ({c.created_at} IS NOT NULL AND {c.created_at} < $BOUND$) NOT VALID",
    "ALTER TABLE {table} VALIDATE CONSTRAINT {n._p_before_bound}",
    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {n._p_before_key}"
    " ON {table} ({c.id}, {c.created_at})",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {n._p_before_event_id} ON {table} ({c.event_id})",
};

/* Under ACCESS EXCLUSIVE, in init-db's transaction: the old table loses
 * its triggers and identity and becomes partition <table>_p_before. */
static const char *const swap_steps[] = {
    "LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE",
    "DROP TRIGGER IF EXISTS {n._order} ON {table}",
    "DROP TRIGGER IF EXISTS {n._notify} ON {table}",
    "ALTER TABLE {table} ALTER {c.id} DROP IDENTITY IF EXISTS",
    "ALTER TABLE {table} ALTER {c.id} DROP DEFAULT",
    "ALTER TABLE {table} RENAME TO {n._p_before}",
    "ALTER TABLE {schema}.{n._p_before} ADD CONSTRAINT {n._p_before_key}"
    " UNIQUE USING INDEX {n._p_before_key}",
    "CREATE TABLE {table} (LIKE {schema}.{n._p_before} INCLUDING DEFAULTS)"
    " PARTITION BY RANGE ({c.created_at})",
    "ALTER TABLE {table} ADD PRIMARY KEY ({c.id}, {c.created_at})",
};
/* clang-format on */

static int run(PGconn *conn, const relay_config *cfg, const char *tmpl, const char *bound,
               char *why, size_t why_size)
{
    char *sql = sql_render(cfg, tmpl);
    char *at = strstr(sql, "$BOUND$");
    int rc;
    if (at) {
        /* the bound is a literal the server wrote: no braces, nothing to render */
        size_t cap = strlen(sql) + strlen(bound) + 1;
        char *full = malloc(cap);
        snprintf(full, cap, "%.*s%s%s", (int)(at - sql), sql, bound, at + strlen("$BOUND$"));
        rc = db_exec(conn, full, why, why_size);
        free(full);
    } else {
        rc = db_exec(conn, sql, why, why_size);
    }
    free(sql);
    return rc;
}

/* The one text value of a query rendered for cfg, with its parameters. */
static int query_one(PGconn *conn, const relay_config *cfg, const char *tmpl, int nparams,
                     const char *const *params, char *out, size_t out_size, char *why,
                     size_t why_size)
{
    char *sql = sql_render(cfg, tmpl);
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    free(sql);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        db_error(conn, res, why, why_size);
    else {
        snprintf(out, out_size, "%s", PQgetvalue(res, 0, 0));
        rc = 0;
    }
    PQclear(res);
    return rc;
}

/* The old table's grants, given again on the new one (the owner's own
 * rights come with ownership). */
static int copy_grants(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    char old[2 * SQL_NAME_MAX + 2];
    sql_derived_name(cfg, "_p_before", old, sizeof old);
    const char *params[] = {cfg->schema, old, cfg->table};
    PGresult *res = PQexecParams(
        conn,
        "SELECT format('GRANT %s ON %I.%I TO %s', a.privilege_type, $1::text, $3::text,"
        " CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END)"
        " FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a"
        " LEFT JOIN pg_roles r ON r.oid = a.grantee"
        " WHERE c.oid = to_regclass(format('%I.%I', $1::text, $2::text)) AND a.grantee <> "
        "c.relowner",
        3, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0)
        db_error(conn, res, why, why_size);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++)
        rc = db_exec(conn, PQgetvalue(res, i, 0), why, why_size);
    PQclear(res);
    return rc;
}

int partition_convert_prepare(PGconn *conn, const relay_config *cfg, char *bound, size_t bound_size,
                              char *why, size_t why_size)
{
    if (db_script()) /* the conversion builds its indexes concurrently */
        return snprintf(why, why_size, "--print-sql cannot show a conversion to partitions"), -1;
    /* two spans on: rows written until the conversion commits stay inside */
    const char *span[] = {cfg->partition_interval};
    if (query_one(conn, cfg,
                  "SELECT quote_literal(date_bin($1::interval, now(),"
                  " timestamptz '2000-01-03 00:00:00+00') + 2 * $1::interval)",
                  1, span, bound, bound_size, why, why_size) < 0)
        return -1;
    for (size_t i = 0; i < sizeof before_steps / sizeof before_steps[0]; i++)
        if (run(conn, cfg, before_steps[i], bound, why, why_size) < 0)
            return -1;
    return 0;
}

int partition_convert_swap(PGconn *conn, const relay_config *cfg, const char *bound, char *why,
                           size_t why_size)
{
    char next[32], tmpl[256];
    /* the identity goes on from the old sequence */
    const char *id[] = {cfg->schema, cfg->table, cfg->col.id};
    if (run(conn, cfg, swap_steps[0], bound, why, why_size) < 0 ||
        query_one(conn, cfg,
                  "SELECT coalesce(nextval(pg_get_serial_sequence(format('%I.%I', $1::text,"
                  " $2::text), $3)), 1)",
                  3, id, next, sizeof next, why, why_size) < 0)
        return -1;
    for (size_t i = 0; i < sizeof kept_indexes / sizeof kept_indexes[0]; i++) {
        snprintf(tmpl, sizeof tmpl, "ALTER INDEX IF EXISTS {schema}.{n.%s} RENAME TO {n.%s}",
                 kept_indexes[i][0], kept_indexes[i][1]);
        if (run(conn, cfg, tmpl, bound, why, why_size) < 0)
            return -1;
    }
    for (size_t i = 1; i < sizeof swap_steps / sizeof swap_steps[0]; i++)
        if (run(conn, cfg, swap_steps[i], bound, why, why_size) < 0)
            return -1;
    snprintf(tmpl, sizeof tmpl,
             "ALTER TABLE {table} ALTER {c.id} ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)",
             next);
    if (run(conn, cfg, tmpl, bound, why, why_size) < 0 ||
        copy_grants(conn, cfg, why, why_size) < 0 ||
        run(conn, cfg,
            "ALTER TABLE {table} ATTACH PARTITION {schema}.{n._p_before}"
            " FOR VALUES FROM (MINVALUE) TO ($BOUND$)",
            bound, why, why_size) < 0 ||
        run(conn, cfg, "ALTER TABLE {schema}.{n._p_before} DROP CONSTRAINT {n._p_before_bound}",
            bound, why, why_size) < 0)
        return -1;
    return 0;
}

void partition_convert_undo(PGconn *conn, const relay_config *cfg)
{
    char ignored[256];
    run(conn, cfg, before_steps[0], "", ignored, sizeof ignored);
}
