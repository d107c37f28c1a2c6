#include "schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "sql.h"

/* SQL text reads best as written. */
/* clang-format off */
/*
 * Version 2. Every step is idempotent, so an existing table (with mapped
 * column names) only gains the relay's state columns and indexes.
 */
static const char *const schema_steps[] = {
    "SELECT pg_advisory_xact_lock(hashtext('outbox-relay init-db'))",
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE IF NOT EXISTS {schema}.outbox_relay_schema ("
    " table_name text PRIMARY KEY, version int NOT NULL,"
    " updated_at timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS {table} ("
    " {c.id} bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " {c.event_id} uuid NOT NULL DEFAULT gen_random_uuid(),"
    " {c.aggregate_type} text NOT NULL,"
    " {c.aggregate_id} text NOT NULL,"
    " {c.event_type} text NOT NULL,"
    " {c.payload} jsonb,"
    " {c.headers} jsonb,"
    " {c.destination} text,"
    " {c.created_at} timestamptz NOT NULL DEFAULT clock_timestamp())",
    /* the relay's own state */
    "ALTER TABLE {table}"
    " ADD COLUMN IF NOT EXISTS {c.available_at} timestamptz NOT NULL DEFAULT now(),"
    " ADD COLUMN IF NOT EXISTS {c.attempts} int NOT NULL DEFAULT 0,"
    " ADD COLUMN IF NOT EXISTS {c.lease_owner} text,"
    " ADD COLUMN IF NOT EXISTS {c.lease_until} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.published_at} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.dead_at} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.last_error} text",
    /* a queue table churns: vacuum and analyze it early, before plans go stale;
     * free room on each page lets the lease updates stay HOT */
    "ALTER TABLE {table} SET (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.01,"
    " autovacuum_analyze_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01)",
    "CREATE UNIQUE INDEX IF NOT EXISTS {n._event_id} ON {table} ({c.event_id})",
    /* the claim scans only pending rows, so published history (and rows held
     * behind a dead head) cost nothing */
    "CREATE INDEX IF NOT EXISTS {n._pending} ON {table} ({c.id})"
    " WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL AND {c.available_at} < 'infinity'",
    /*
     * ordering = aggregate: the claim walks the distinct aggregates with live
     * events and finds each one's head here; dead events are kept apart so
     * that a pile of them costs the walk nothing (on_dead = block looks them
     * up per head). Version 1 had one index over both.
     */
    "DROP INDEX IF EXISTS {schema}.{n._aggregate_pending}",
    "CREATE INDEX IF NOT EXISTS {n._aggregate_live} ON {table}"
    " ({c.aggregate_type}, {c.aggregate_id}, {c.id})"
    " WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL",
    "CREATE INDEX IF NOT EXISTS {n._aggregate_dead} ON {table}"
    " ({c.aggregate_type}, {c.aggregate_id}, {c.id})"
    " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL",
    /* version 1 held events behind a waiting head at 'infinity'; heads are
     * found without that now */
    "UPDATE {table} SET {c.available_at} = now() WHERE {c.available_at} = 'infinity'"
    " AND {c.published_at} IS NULL AND {c.dead_at} IS NULL AND EXISTS (SELECT 1 FROM"
    " {schema}.outbox_relay_schema v WHERE v.table_name = {lit.table} AND v.version < 2)",
    "CREATE INDEX IF NOT EXISTS {n._published} ON {table} ({c.published_at})"
    " WHERE {c.published_at} IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS {n._dead} ON {table} ({c.dead_at}) WHERE {c.dead_at} IS NOT NULL",
    "CREATE OR REPLACE FUNCTION {schema}.{n._enqueue}("
    " p_aggregate_type text, p_aggregate_id text, p_event_type text,"
    " p_payload {table}.{c.payload}%TYPE,"
    " p_headers {table}.{c.headers}%TYPE DEFAULT NULL, p_destination text DEFAULT NULL)"
    " RETURNS uuid LANGUAGE sql AS $$"
    " INSERT INTO {table} ({c.aggregate_type}, {c.aggregate_id}, {c.event_type}, {c.payload},"
    " {c.headers}, {c.destination}) VALUES ($1, $2, $3, $4, $5, $6) RETURNING {c.event_id} $$",
    /*
     * Per-aggregate commit order: an insert takes a transaction-scoped lock on
     * its aggregate, then draws its id. A second transaction writing the same
     * aggregate waits for the first to end, so its ids are higher AND commit
     * later: a lower id of an aggregate can never still be uncommitted when a
     * higher one is visible. Other aggregates never wait.
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._order}() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_advisory_xact_lock(TG_RELID::int,"
    " hashtext(NEW.{c.aggregate_type} || '/' || NEW.{c.aggregate_id}));"
    " NEW.{c.id} := nextval(pg_get_serial_sequence({lit.table}, {lit.c.id})); RETURN NEW; END $$",
    "DROP TRIGGER IF EXISTS {n._order} ON {table}",
    "CREATE TRIGGER {n._order} BEFORE INSERT ON {table}"
    " FOR EACH ROW EXECUTE FUNCTION {schema}.{n._order}()",
    /* one notification per inserting statement; PostgreSQL folds equal
     * notifications of one transaction into one */
    "CREATE OR REPLACE FUNCTION {schema}.{n._notify}() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify({lit.table}, ''); RETURN NULL; END $$",
    "DROP TRIGGER IF EXISTS {n._notify} ON {table}",
    "CREATE TRIGGER {n._notify} AFTER INSERT ON {table}"
    " FOR EACH STATEMENT EXECUTE FUNCTION {schema}.{n._notify}()",
    "INSERT INTO {schema}.outbox_relay_schema (table_name, version) VALUES ({lit.table}, 2)"
    " ON CONFLICT (table_name) DO UPDATE SET version = 2, updated_at = now()",
};
/* clang-format on */

int schema_install(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char why[1024];
    if (db_exec(conn, "BEGIN", why, sizeof why) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof schema_steps / sizeof schema_steps[0]; i++) {
        char *sql = sql_render(cfg, schema_steps[i]);
        int rc = db_exec(conn, sql, why, sizeof why);
        free(sql);
        if (rc < 0) {
            db_exec(conn, "ROLLBACK", err, err_size);
            goto fail;
        }
    }
    if (db_exec(conn, "COMMIT", why, sizeof why) == 0)
        return 0;
fail:
    snprintf(err, err_size, "init-db failed for %s.%s: %s", cfg->schema, cfg->table, why);
    return -1;
}

int schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char *sql = sql_render(cfg, "SELECT version FROM {schema}.outbox_relay_schema"
                                " WHERE table_name = {lit.table}");
    PGresult *res = PQexec(conn, sql);
    free(sql);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) == 0)
        snprintf(err, err_size,
                 "table %s.%s has no outbox-relay schema: run `outbox-relay init-db -c %s`",
                 cfg->schema, cfg->table, cfg->path);
    else if (atoi(PQgetvalue(res, 0, 0)) != SCHEMA_VERSION)
        snprintf(err, err_size,
                 "table %s.%s has schema version %s, this relay needs %d: run init-db", cfg->schema,
                 cfg->table, PQgetvalue(res, 0, 0), SCHEMA_VERSION);
    else
        rc = 0;
    PQclear(res);
    return rc;
}
