/* Cursor mode's objects. The reader's rule and why it holds are in
 * core/DESIGN.md ("The cursor source"). */
#include "cursor/cursor_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor/cursor_shard.h"
#include "db/db.h"
#include "db/dead_letter.h"
#include "db/enqueue.h"
#include "db/schema.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
static const char *const cursor_steps[] = {
    "SELECT pg_advisory_xact_lock(hashtext('outbox-relay init-db'))",
    /* every insert waits here, and in-flight inserting transactions end
     * first: no row is written by the order trigger of before, unstamped */
    "LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE",
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS cursor_xid xid8",
    "ALTER TABLE {schema}.{n._aggregate_seq} ADD COLUMN IF NOT EXISTS last_xid xid8",
    /*
     * The order trigger of enqueue.c, and the row's place in the cursor's
     * order: its transaction's id, or the aggregate's last place if that is
     * higher (a transaction may take its id before it waits for the
     * aggregate's lock). So an aggregate's places never go down in id
     * order, and a place is never below its own transaction's id: every row
     * placed below the oldest running transaction's id is committed (or
     * rolled back) for good.
     */
    ENQUEUE_ORDER_HEAD
    " INSERT INTO {schema}.{n._aggregate_seq} AS s (aggregate_type, aggregate_id, seq, last_xid)"
    " VALUES (NEW.{c.aggregate_type}, NEW.{c.aggregate_id}, 1, pg_current_xact_id())"
    " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET seq = s.seq + 1,"
    " last_xid = greatest(s.last_xid, pg_current_xact_id())"
    " RETURNING s.seq, s.last_xid INTO NEW.{c.aggregate_seq}, NEW.cursor_xid;"
    " RETURN NEW; END {$}",
    "CREATE TABLE IF NOT EXISTS {schema}.{n._cursor} (shard int PRIMARY KEY,"
    " xid xid8 NOT NULL, id bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())",
    /* this shard's row (0: unsharded), raised after the steps from where
     * another layout's rows say its events are finished */
    "INSERT INTO {schema}.{n._cursor} (shard, xid, id) VALUES ({cursor.shard}, '0', 0)"
    " ON CONFLICT (shard) DO NOTHING",
    /*
     * Rows pending when the table comes from poll mode (or was filled before
     * the trigger stamped them) are placed at this transaction's id: above
     * the cursor, readable once this commits. Their aggregates' later rows
     * must come after them, so each aggregate's last place is raised too
     * (an insert waiting on the lock above reads it after this commits).
     */
    "WITH placed AS (UPDATE {table} SET cursor_xid = pg_current_xact_id()"
    "  WHERE cursor_xid IS NULL AND {c.published_at} IS NULL AND {c.dead_at} IS NULL RETURNING 1)"
    " UPDATE {schema}.{n._aggregate_seq} SET last_xid = pg_current_xact_id()"
    " WHERE EXISTS (SELECT 1 FROM placed)",
};

/* The read's index: (cursor_xid, id), after the shard's hash when sharded,
 * one index per layout (each shard reads one range of it). */
static char *index_sql(const relay_config *cfg)
{
    if (cfg->cursor_shards == 1)
        return sql_render(cfg, "CREATE INDEX IF NOT EXISTS {n._cursor_order} ON {table}"
                               " (cursor_xid, {c.id})");
    char suffix[32], tmpl[256];
    snprintf(suffix, sizeof suffix, "_cursor_by%d", cfg->cursor_shards);
    snprintf(tmpl, sizeof tmpl,
             "CREATE INDEX IF NOT EXISTS {n.%s} ON {table} (" SQL_CURSOR_HASH("") ", cursor_xid, {c.id})",
             suffix, cfg->cursor_shards - 1);
    return sql_render(cfg, tmpl);
}

/* The objects, and an order trigger that stamps the place. $1 schema,
 * $2 cursor table, $3 order function, $4 outbox table. */
static const char check_sql[] =
    "SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL"
    " AND EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    "  WHERE n.nspname = $1 AND p.proname = $3 AND p.prosrc LIKE '%cursor_xid%')"
    " AND EXISTS (SELECT 1 FROM pg_attribute WHERE attname = 'cursor_xid' AND NOT attisdropped"
    "  AND attrelid = to_regclass(format('%I.%I', $1::text, $4::text)))";
/* clang-format on */

static int run_index(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char *sql = index_sql(cfg);
    int rc = db_exec(conn, sql, err, err_size);
    free(sql);
    return rc;
}

int cursor_schema_install(PGconn *conn, const relay_config *cfg, int reset_slot, char *err,
                          size_t err_size)
{
    (void)reset_slot;
    char why[1024];
    if (db_exec(conn, "BEGIN", why, sizeof why) < 0)
        goto fail;
    if (schema_run_steps(conn, cfg, cursor_steps, sizeof cursor_steps / sizeof cursor_steps[0], why,
                         sizeof why) < 0 ||
        schema_run_steps(conn, cfg, dead_letter_steps, dead_letter_step_count, why, sizeof why) <
            0 ||
        run_index(conn, cfg, why, sizeof why) < 0 ||
        cursor_shard_raise(conn, cfg, why, sizeof why) < 0 ||
        db_exec(conn, "COMMIT", why, sizeof why) < 0) {
        char ignored[256];
        db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
        goto fail;
    }
    return 0;
fail:
    snprintf(err, err_size, "init-db (cursor mode) failed for %s.%s: %s", cfg->schema, cfg->table,
             why);
    return -1;
}

/* This shard's row: init-db made it for the shard the config names. */
static int shard_row_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char *sql = sql_render(cfg, "SELECT 1 FROM {schema}.{n._cursor} WHERE shard = {cursor.shard}");
    PGresult *res = PQexec(conn, sql);
    free(sql);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        db_error(conn, res, err, err_size);
    else if (!ok)
        snprintf(err, err_size,
                 "the cursor of shard %d of %d of %s.%s is missing: run `outbox-relay init-db -c "
                 "%s` (once per shard's config)",
                 cfg->cursor_shard, cfg->cursor_shards, cfg->schema, cfg->table, cfg->path);
    PQclear(res);
    return ok ? 0 : -1;
}

int cursor_schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char cursor[SQL_NAME_MAX + 1], order[SQL_NAME_MAX + 1];
    sql_derived_name(cfg, "_cursor", cursor, sizeof cursor);
    sql_derived_name(cfg, "_order", order, sizeof order);
    const char *params[] = {cfg->schema, cursor, order, cfg->table};
    PGresult *res = PQexecParams(conn, check_sql, 4, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
             PQgetvalue(res, 0, 0)[0] == 't';
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        db_error(conn, res, err, err_size);
    else if (!ok)
        snprintf(err, err_size,
                 "cursor mode's objects of %s.%s (the cursor table, the stamping order trigger, "
                 "the cursor_xid column) are missing: run `outbox-relay init-db -c %s`",
                 cfg->schema, cfg->table, cfg->path);
    PQclear(res);
    return ok ? shard_row_check(conn, cfg, err, err_size) : -1;
}
