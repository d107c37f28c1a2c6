#include "db/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/adopt.h"
#include "db/db.h"
#include "db/dead_letter.h"
#include "db/enqueue.h"
#include "db/own_tables.h"
#include "db/partition_convert.h"
#include "db/partitions.h"
#include "db/pgarray.h"
#include "db/sql.h"

/* The objects init-db makes beside the table, by name suffix ({n.SUFFIX}). */
static const char *const index_suffixes[] = {
    "_event_id", "_pending", "_aggregate_live", "_aggregate_dead", "_published", "_dead", NULL};
/* suffixes of version 1 objects no longer made: dropped by init-db */
static const char *const retired_index_suffixes[] = {"_aggregate_pending", NULL};
static const char *const function_suffixes[] = {"_enqueue", "_order", "_notify",
                                                "_idempotency_prune", NULL};
/* each trigger calls the function of the same suffix */
static const char *const trigger_suffixes[] = {"_order", "_notify", NULL};

/* SQL text reads best as written. */
/* clang-format off */
/* The table and its columns. Every step is idempotent, so an existing table
 * (with mapped column names) only gains the relay's state columns. */
static const char *const head_steps[] = {
    "SELECT pg_advisory_xact_lock(hashtext('outbox-relay init-db'))",
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE IF NOT EXISTS {schema}.outbox_relay_schema ("
    " table_name text PRIMARY KEY, version int NOT NULL,"
    " updated_at timestamptz NOT NULL DEFAULT now())",
};
/* a partitioned outbox is partitions.c's partitions_create_table */
static const char plain_create_table[] =
    "CREATE TABLE IF NOT EXISTS {table} ("
    " {c.id} bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " {c.event_id} uuid NOT NULL DEFAULT gen_random_uuid(),"
    " {c.aggregate_type} text NOT NULL,"
    " {c.aggregate_id} text NOT NULL,"
    " {c.event_type} text NOT NULL,"
    " {c.payload} jsonb,"
    " {c.headers} jsonb,"
    " {c.destination} text,"
    " {c.created_at} timestamptz NOT NULL DEFAULT clock_timestamp())";
static const char *const table_steps[] = {
    /* an adopted table (Debezium's EventRouter shape, with mapped names)
     * gains the columns the relay reads and it lacks: its own order column
     * (numbered for existing rows) and the optional ones, empty */
    "ALTER TABLE {table}"
    " ADD COLUMN IF NOT EXISTS {c.id} bigint GENERATED ALWAYS AS IDENTITY,"
    " ADD COLUMN IF NOT EXISTS {c.headers} jsonb,"
    " ADD COLUMN IF NOT EXISTS {c.destination} text,"
    " ADD COLUMN IF NOT EXISTS {c.created_at} timestamptz NOT NULL DEFAULT clock_timestamp()",
    /* the relay's own state */
    "ALTER TABLE {table}"
    " ADD COLUMN IF NOT EXISTS {c.available_at} timestamptz NOT NULL DEFAULT now(),"
    " ADD COLUMN IF NOT EXISTS {c.attempts} int NOT NULL DEFAULT 0,"
    " ADD COLUMN IF NOT EXISTS {c.lease_owner} text,"
    " ADD COLUMN IF NOT EXISTS {c.lease_until} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.published_at} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.dead_at} timestamptz,"
    " ADD COLUMN IF NOT EXISTS {c.last_error} text",
    /* dead events the dead_letter output acknowledged, or refused for good
     * (refused: its reason; forward/dead_forward.c):
     * one row per time an event died, so a requeued event that dies again
     * goes out again */
    "CREATE TABLE IF NOT EXISTS {schema}.{n._dead_forwarded} ("
    " dead_key text NOT NULL, dead_at_us bigint NOT NULL,"
    " forwarded_at timestamptz NOT NULL DEFAULT now(), refused text,"
    " PRIMARY KEY (dead_key, dead_at_us))",
};

/* A queue table churns: vacuum and analyze it early, before plans go stale;
 * free room on each page keeps a recorded row's new version on its page
 * (no update is HOT: the record changes the partial indexes' predicates).
 * A partitioned table has no storage: each partition is made with these. */
static const char plain_storage[] =
    "ALTER TABLE {table} SET (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.01,"
    " autovacuum_analyze_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01)";

/* A partitioned table's unique indexes must hold the partition key: there
 * event_id has a plain index (partitions.c says why). */
static const char event_id_unique[] = "CREATE UNIQUE INDEX IF NOT EXISTS {n._event_id} ON {table} ({c.event_id})";
static const char event_id_plain[] = "CREATE INDEX IF NOT EXISTS {n._event_id} ON {table} ({c.event_id})";

/*
 * Version 1 named objects "<table><suffix>", which PostgreSQL cut at 63
 * bytes: long names collided. This finds, on the table and in its schema,
 * objects under a version 1 name that is not a current name, as DROP
 * statements (triggers before the functions they call). Casting to name
 * cuts exactly as the server did when it created them.
 * $1 schema, $2 table, $3 version 1 names, $4 current names.
 */
static const char old_objects_sql[] =
    "WITH t AS (SELECT c.oid, c.relnamespace FROM pg_class c"
    "   JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2),"
    " old AS (SELECT o::name AS name FROM unnest($3::text[]) o"
    "   EXCEPT SELECT x::name FROM unnest($4::text[]) x)"
    " SELECT s FROM ("
    " SELECT 1, format('DROP TRIGGER %I ON %s', g.tgname, g.tgrelid::regclass) FROM pg_trigger g, t"
    "   WHERE g.tgrelid = t.oid AND NOT g.tgisinternal AND g.tgname IN (SELECT name FROM old)"
    " UNION ALL SELECT 2, format('DROP FUNCTION %s', p.oid::regprocedure) FROM pg_proc p, t"
    "   WHERE p.pronamespace = t.relnamespace AND p.proname IN (SELECT name FROM old)"
    "   AND (p.prorettype = 'trigger'::regtype AND p.pronargs = 0"
    "     OR p.prorettype = 'uuid'::regtype AND p.pronargs = 6)"
    " UNION ALL SELECT 3, format('DROP INDEX %s', i.indexrelid::regclass)"
    "   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, t"
    "   WHERE i.indrelid = t.oid AND c.relname IN (SELECT name FROM old)"
    " ) d(step, s) ORDER BY step";

/*
 * Indexes, functions and triggers, under names that cannot collide. The
 * triggers get the id column and the channel as arguments, so no function
 * body holds a configured name as a string literal, and they name the
 * table by TG_TABLE_SCHEMA and TG_TABLE_NAME, quoted.
 */
static const char *const object_steps[] = {
    /* the claim scans only pending rows, so published history (and rows held
     * behind a dead head) cost nothing */
    "CREATE INDEX IF NOT EXISTS {n._pending} ON {table} ({c.id})"
    " WHERE {c.published_at} IS NULL AND {c.dead_at} IS NULL AND {c.available_at} < 'infinity'",
    /*
     * ordering = aggregate: the claim walks the distinct aggregates with live
     * events and finds each one's head here; dead events are kept apart so
     * that a pile of them costs the walk nothing (on_dead = block looks them
     * up per head). Version 1 had one index over both (_aggregate_pending).
     */
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
    /* A jsonb payload's size as text, for the claim's max_payload_bytes check.
     * Its text form can pass PostgreSQL's 1 GB limit when the stored value
     * does not (escaped control characters, long numerics): the cast fails
     * then, and that must not fail the claim, so the size is given as 1 GB
     * (what the text passed), over any max_payload_bytes. One per schema, so a
     * table registered by hand (a partitioned one) has it too. Its calls are
     * qualified instead of a SET search_path, which would cost a setting's
     * save and restore per claimed row; every other function init-db
     * installs carries SET search_path = pg_catalog, pg_temp (issue 54). */
    "CREATE OR REPLACE FUNCTION {schema}." SCHEMA_PAYLOAD_SIZE_FUNCTION "(p jsonb) RETURNS bigint"
    " LANGUAGE plpgsql STABLE AS {$} BEGIN RETURN pg_catalog.octet_length(p::pg_catalog.text);"
    " EXCEPTION WHEN OTHERS THEN RETURN 1073741824; END {$}",
    /* one notification per inserting statement; PostgreSQL folds equal
     * notifications of one transaction into one. TG_ARGV[0]: the channel. */
    "CREATE OR REPLACE FUNCTION {schema}.{n._notify}() RETURNS trigger LANGUAGE plpgsql"
    " SET search_path = pg_catalog, pg_temp AS {$}"
    " BEGIN PERFORM pg_notify(TG_ARGV[0], ''); RETURN NULL; END {$}",
    "DROP TRIGGER IF EXISTS {n._notify} ON {table}",
    "CREATE TRIGGER {n._notify} AFTER INSERT ON {table}"
    " FOR EACH STATEMENT EXECUTE FUNCTION {schema}.{n._notify}({lit.channel})",
    "INSERT INTO {schema}.outbox_relay_schema (table_name, version)"
    " VALUES ({lit.table}, " SCHEMA_VERSION_TEXT ")"
    " ON CONFLICT (table_name) DO UPDATE SET version = EXCLUDED.version, updated_at = now()",
};

/*
 * What init-db made, checked in the catalog: names that are missing, or a
 * trigger that is disabled or calls another function. $1 schema, $2 table,
 * $3 index names, $4 function names, $5 trigger names, $6 their functions.
 */
static const char missing_sql[] =
    "WITH t AS (SELECT c.oid, c.relnamespace FROM pg_class c"
    "   JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2)"
    " SELECT 'index ' || x FROM unnest($3::text[]) x WHERE NOT EXISTS (SELECT 1"
    "   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, t"
    "   WHERE i.indrelid = t.oid AND c.relname = x)"
    " UNION ALL SELECT 'function ' || x FROM unnest($4::text[]) x WHERE NOT EXISTS (SELECT 1"
    "   FROM pg_proc p, t WHERE p.pronamespace = t.relnamespace AND p.proname = x)"
    " UNION ALL SELECT 'trigger ' || x FROM unnest($5::text[], $6::text[]) u(x, f)"
    "   WHERE NOT EXISTS (SELECT 1 FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid, t"
    "   WHERE g.tgrelid = t.oid AND g.tgname = x AND g.tgenabled <> 'D'"
    "   AND p.proname = f AND p.pronamespace = t.relnamespace)"
    " UNION ALL SELECT 'table ' || $2 WHERE NOT EXISTS (SELECT 1 FROM t)";
/* clang-format on */

int schema_run_steps(PGconn *conn, const relay_config *cfg, const char *const *steps, size_t n,
                     char *why, size_t why_size)
{
    for (size_t i = 0; i < n; i++) {
        char *sql = sql_render(cfg, steps[i]);
        int rc = db_exec(conn, sql, why, why_size);
        free(sql);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Adds the derived name of each suffix to a; with v1, the old uncut name. */
static void add_names(pgarray *a, const relay_config *cfg, const char *const *suffixes, int v1)
{
    char name[2 * SQL_NAME_MAX + 2];
    for (const char *const *s = suffixes; *s; s++) {
        if (v1)
            snprintf(name, sizeof name, "%s%s", cfg->table, *s);
        else
            sql_derived_name(cfg, *s, name, sizeof name);
        pgarray_add(a, name, 1);
    }
}

/* Drops what version 1 left under names that are no longer used. */
static int drop_v1_objects(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    pgarray old, now;
    pgarray_init(&old);
    pgarray_init(&now);
    add_names(&old, cfg, index_suffixes, 1);
    add_names(&old, cfg, retired_index_suffixes, 1);
    add_names(&old, cfg, function_suffixes, 1);
    add_names(&now, cfg, index_suffixes, 0);
    add_names(&now, cfg, function_suffixes, 0);
    const char *params[] = {cfg->schema, cfg->table, pgarray_text(&old), pgarray_text(&now)};
    PGresult *res = PQexecParams(conn, old_objects_sql, 4, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0)
        db_error(conn, res, why, why_size);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++)
        rc = db_exec(conn, PQgetvalue(res, i, 0), why, why_size);
    PQclear(res);
    pgarray_free(&old);
    pgarray_free(&now);
    return rc;
}

/* Checks every object the relay and the application rely on exists. */
static int verify_objects(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    pgarray idx, fn, tg, tgfn;
    pgarray_init(&idx);
    pgarray_init(&fn);
    pgarray_init(&tg);
    pgarray_init(&tgfn);
    add_names(&idx, cfg, index_suffixes, 0);
    add_names(&fn, cfg, function_suffixes, 0);
    if (partitions_on(cfg))
        add_names(&fn, cfg, partitions_function_suffixes, 0);
    pgarray_add(&fn, SCHEMA_PAYLOAD_SIZE_FUNCTION, 1);
    add_names(&tg, cfg, trigger_suffixes, 0);
    add_names(&tgfn, cfg, trigger_suffixes, 0);
    const char *params[] = {cfg->schema,       cfg->table,        pgarray_text(&idx),
                            pgarray_text(&fn), pgarray_text(&tg), pgarray_text(&tgfn)};
    PGresult *res = PQexecParams(conn, missing_sql, 6, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, why, why_size);
    } else if (PQntuples(res) > 0) {
        int n = snprintf(why, why_size, "missing after install:");
        for (int i = 0; i < PQntuples(res) && n > 0 && (size_t)n < why_size; i++)
            n += snprintf(why + n, why_size - n, "%s %s", i ? "," : "", PQgetvalue(res, i, 0));
    } else {
        rc = 0;
    }
    PQclear(res);
    pgarray_free(&idx);
    pgarray_free(&fn);
    pgarray_free(&tg);
    pgarray_free(&tgfn);
    return rc;
}

/* The table, its columns and its storage; a partitioned one as configured,
 * converted from the plain one when bound is set. */
static int install_table(PGconn *conn, const relay_config *cfg, const char *bound, char *why,
                         size_t why_size)
{
    const char *create = partitions_on(cfg) ? partitions_create_table : plain_create_table;
    if (schema_run_steps(conn, cfg, head_steps, sizeof head_steps / sizeof head_steps[0], why,
                         why_size) < 0 ||
        (bound && partition_convert_swap(conn, cfg, bound, why, why_size) < 0) ||
        schema_run_steps(conn, cfg, &create, 1, why, why_size) < 0 ||
        schema_run_steps(conn, cfg, table_steps, sizeof table_steps / sizeof table_steps[0], why,
                         why_size) < 0)
        return -1;
    const char *storage = plain_storage;
    return partitions_on(cfg) ? 0 : schema_run_steps(conn, cfg, &storage, 1, why, why_size);
}

/* Indexes, functions and triggers; a partitioned table's upkeep functions,
 * the dead-letter table its retired partitions' dead rows move to, and its
 * partitions from now to `ahead` spans on. */
static int install_objects(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    const char *event_id = partitions_on(cfg) ? event_id_plain : event_id_unique;
    if (schema_run_steps(conn, cfg, &event_id, 1, why, why_size) < 0 ||
        schema_run_steps(conn, cfg, object_steps, sizeof object_steps / sizeof object_steps[0], why,
                         why_size) < 0)
        return -1;
    if (!partitions_on(cfg))
        return 0;
    if (schema_run_steps(conn, cfg, partitions_function_steps, partitions_function_step_count, why,
                         why_size) < 0 ||
        schema_run_steps(conn, cfg, dead_letter_steps, dead_letter_step_count, why, why_size) < 0)
        return -1;
    return partitions_init_ahead(conn, cfg, why, why_size);
}

int schema_install(PGconn *conn, const relay_config *cfg, adopt_from from, char *err,
                   size_t err_size)
{
    char why[1024], bound[128];
    int convert = partitions_check_table(conn, cfg, why, sizeof why), mark_now = 0;
    if (convert < 0 ||
        (convert && partition_convert_prepare(conn, cfg, bound, sizeof bound, why, sizeof why) < 0))
        goto fail;
    if (db_exec(conn, "BEGIN", why, sizeof why) < 0)
        goto fail;
    /* the relay's own tables are checked before anything reads or writes
     * them, and again once every one of them is made */
    if (adopt_check(conn, cfg, from, &mark_now, why, sizeof why) < 0 ||
        install_table(conn, cfg, convert ? bound : NULL, why, sizeof why) < 0 ||
        (mark_now && adopt_mark_published(conn, cfg, why, sizeof why) < 0) ||
        schema_run_steps(conn, cfg, own_tables_steps, own_tables_step_count, why, sizeof why) < 0 ||
        own_tables_check_all(conn, cfg, why, sizeof why) < 0 ||
        drop_v1_objects(conn, cfg, why, sizeof why) < 0 ||
        schema_run_steps(conn, cfg, enqueue_steps, enqueue_step_count, why, sizeof why) < 0 ||
        own_tables_check_all(conn, cfg, why, sizeof why) < 0 ||
        install_objects(conn, cfg, why, sizeof why) < 0 ||
        verify_objects(conn, cfg, why, sizeof why) < 0) {
        char ignored[256];
        db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
        if (convert)
            partition_convert_undo(conn, cfg);
        goto fail;
    }
    if (db_exec(conn, "COMMIT", why, sizeof why) == 0)
        return 0;
fail:
    snprintf(err, err_size, "init-db failed for %s.%s: %s", cfg->schema, cfg->table, why);
    return -1;
}

int schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    if (own_table_ready(conn, cfg, OWN_SCHEMA_TABLE, err, err_size) < 0)
        return -1;
    /* the registry key is bound as a parameter, never spliced into the text */
    char *sql = sql_render(cfg, "SELECT version FROM {schema}.outbox_relay_schema"
                                " WHERE table_name = $1");
    char key[2 * SQL_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s.%s", cfg->schema, cfg->table);
    const char *params[] = {key};
    PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
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

int schema_payload_type(PGconn *conn, const relay_config *cfg, char *out, size_t out_size,
                        char *err, size_t err_size)
{
    const char *params[] = {cfg->schema, cfg->table, cfg->col.payload};
    PGresult *res = PQexecParams(conn,
                                 "SELECT format_type(a.atttypid, NULL) FROM pg_attribute a"
                                 " JOIN pg_class c ON c.oid = a.attrelid"
                                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
                                 " WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = $3"
                                 " AND NOT a.attisdropped",
                                 3, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        db_error(conn, res, err, err_size);
    else if (PQntuples(res) == 0)
        snprintf(err, err_size, "table %s.%s has no payload column \"%s\"", cfg->schema, cfg->table,
                 cfg->col.payload);
    else {
        snprintf(out, out_size, "%s", PQgetvalue(res, 0, 0));
        rc = 0;
    }
    PQclear(res);
    return rc;
}
