#include "db/partitions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "db/db.h"
#include "db/lock_holder.h"
#include "db/sql.h"

int partitions_on(const relay_config *cfg)
{
    return cfg->partition_interval != NULL;
}

/* SQL text reads best as written. */
/* clang-format off */
/*
 * A unique index of a partitioned table must hold the partition key, so
 * the key is (id, created_at) and event_id has a plain index (schema.c):
 * event ids are gen_random_uuid(), and idempotency keys have their own
 * table, which is not partitioned.
 */
const char partitions_create_table[] =
    "CREATE TABLE IF NOT EXISTS {table} ("
    " {c.id} bigint GENERATED ALWAYS AS IDENTITY,"
    " {c.event_id} uuid NOT NULL DEFAULT gen_random_uuid(),"
    " {c.aggregate_type} text NOT NULL,"
    " {c.aggregate_id} text NOT NULL,"
    " {c.event_type} text NOT NULL,"
    " {c.payload} jsonb,"
    " {c.headers} jsonb,"
    " {c.destination} text,"
    " {c.created_at} timestamptz NOT NULL DEFAULT clock_timestamp(),"
    " PRIMARY KEY ({c.id}, {c.created_at})) PARTITION BY RANGE ({c.created_at})";

const char *const partitions_function_suffixes[] = {"_partition_bounds", "_partition_ahead",
                                                    "_partition_retire", NULL};

/*
 * The functions take the table's schema and name as arguments (no body
 * holds a configured name as a string literal). Partitions are cut at
 * multiples of the span from a Monday, 2000-01-03 00:00 UTC (date_bin), and
 * named <table>_pYYYYMMDD_HH24MI by their start in UTC.
 */
const char *const partitions_function_steps[] = {
    /* each attached partition's range (lo NULL: MINVALUE, a converted
     * table's); a DEFAULT partition is left out */
    "CREATE OR REPLACE FUNCTION {schema}.{n._partition_bounds}(p_parent regclass)"
    " RETURNS TABLE (part regclass, lo timestamptz, hi timestamptz, detaching boolean)"
    " LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS {$}"
    " SELECT c.oid::regclass, m[1]::timestamptz, m[2]::timestamptz, h.inhdetachpending"
    " FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid,"
    " LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),"
    "   'FROM [(](?:''([^'']*)''|MINVALUE)[)] TO [(]''([^'']*)''[)]') m"
    " WHERE h.inhparent = p_parent AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT' {$}",
    /*
     * A new partition is made as a table of its own, then attached: ATTACH
     * takes SHARE UPDATE EXCLUSIVE on the outbox, which neither inserts nor
     * claims wait for (CREATE TABLE ... PARTITION OF would take ACCESS
     * EXCLUSIVE). One caller at a time per table; another returns nothing.
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._partition_ahead}(p_schema text, p_table text,"
    " p_span interval, p_ahead int) RETURNS SETOF text LANGUAGE plpgsql"
    " SET search_path = pg_catalog, pg_temp AS {$}"
    " DECLARE parent regclass := format('%I.%I', p_schema, p_table)::regclass;"
    "  v_base text := CASE WHEN octet_length(p_table) <= 40 THEN p_table"
    "   ELSE left(md5(p_table), 12) END;"
    "  v_lo timestamptz := date_bin(p_span, now(), timestamptz '2000-01-03 00:00:00+00');"
    "  v_part text;"
    " BEGIN"
    "  IF NOT pg_try_advisory_xact_lock(hashtext('outbox-relay partitions'),"
    "   hashtext(p_schema || '.' || p_table)) THEN RETURN; END IF;"
    "  FOR i IN 0..p_ahead LOOP"
    "   IF NOT EXISTS (SELECT 1 FROM {schema}.{n._partition_bounds}(parent) b"
    "    WHERE coalesce(b.lo, '-infinity') < v_lo + p_span AND coalesce(b.hi, 'infinity') > v_lo) THEN"
    "    v_part := v_base || '_p' || to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD\"_\"HH24MI');"
    "    EXECUTE format('CREATE TABLE %I.%I (LIKE %s INCLUDING DEFAULTS) WITH (fillfactor = 85,"
    "     autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01,"
    "     autovacuum_vacuum_insert_scale_factor = 0.01)', p_schema, v_part, parent);"
    "    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',"
    "     parent, p_schema, v_part, v_lo, v_lo + p_span);"
    "    RETURN NEXT v_part;"
    "   END IF;"
    "   v_lo := v_lo + p_span;"
    "  END LOOP;"
    " END {$}",
    /* version 1 had no p_dead and no moved column */
    "DROP FUNCTION IF EXISTS {schema}.{n._partition_retire}(text, text, interval)",
    /*
     * The partitions wholly older than p_keep, each with what may be done:
     * 'detach' when it holds no pending row and no dead one, counted under
     * a SHARE lock (no row of it can change meanwhile; claims and inserts
     * elsewhere go on); its dead rows are first moved to p_dead (the
     * dead-letter table; NULL under on_dead = block, where a dead row holds
     * its aggregate in place), counted in moved; 'kept: ...' otherwise,
     * 'busy' when the lock was not had within lock_timeout; 'finalize' for a
     * detach left half done (past keep too: one an operator began on a
     * younger partition is theirs). The caller detaches concurrently, checks
     * again and drops (a detach cannot run in a function).
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._partition_retire}(p_schema text, p_table text,"
    " p_keep interval, p_dead regclass)"
    " RETURNS TABLE (part text, lo text, hi text, outcome text, moved bigint)"
    " LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS {$}"
    " #variable_conflict use_column\n"
    " DECLARE parent regclass := format('%I.%I', p_schema, p_table)::regclass;"
    "  r record; pending bigint; dead bigint;"
    " BEGIN"
    "  IF NOT pg_try_advisory_xact_lock(hashtext('outbox-relay partitions'),"
    "   hashtext(p_schema || '.' || p_table)) THEN RETURN; END IF;"
    "  FOR r IN SELECT b.part, b.lo, b.hi, b.detaching FROM {schema}.{n._partition_bounds}(parent) b"
    "   WHERE b.hi <= now() - p_keep ORDER BY b.lo LOOP"
    "   part := r.part::text; lo := r.lo::text; hi := r.hi::text; moved := 0;"
    "   IF r.detaching THEN outcome := 'finalize'; RETURN NEXT; CONTINUE; END IF;"
    "   BEGIN"
    "    EXECUTE format('LOCK TABLE %s IN SHARE MODE', r.part);"
    /* each count in the words of a partial index (_aggregate_live,
     * _aggregate_dead): it reads the index, not the partition */
    "    SELECT count(*) INTO pending FROM {table} o"
    "     WHERE o.{c.created_at} >= coalesce(r.lo, '-infinity')"
    "     AND o.{c.created_at} < r.hi AND o.{c.published_at} IS NULL AND o.{c.dead_at} IS NULL;"
    "    SELECT count(*) INTO dead FROM {table} o"
    "     WHERE o.{c.created_at} >= coalesce(r.lo, '-infinity')"
    "     AND o.{c.created_at} < r.hi AND o.{c.dead_at} IS NOT NULL AND o.{c.published_at} IS NULL;"
    /* an event id already in p_dead undoes the move: the partition stays */
    "    IF pending = 0 AND dead > 0 AND p_dead IS NOT NULL THEN"
    "     EXECUTE format('WITH m AS (DELETE FROM %s WHERE {c.dead_at} IS NOT NULL"
    "      AND {c.published_at} IS NULL RETURNING *) INSERT INTO %s ({c.event_id},"
    "      {c.aggregate_type}, {c.aggregate_id}, {c.event_type}, {c.payload}, {c.headers},"
    "      {c.destination}, {c.created_at}, {c.event_version}, dl_attempts, dl_error, dl_at)"
    "      SELECT {c.event_id}, {c.aggregate_type}, {c.aggregate_id}, {c.event_type}, {c.payload},"
    "      {c.headers}, {c.destination}, {c.created_at}, {c.event_version}, {c.attempts},"
    "      {c.last_error}, {c.dead_at} FROM m', r.part, p_dead);"
    "     GET DIAGNOSTICS moved = ROW_COUNT;"
    "     dead := dead - moved;"
    "    END IF;"
    "    outcome := CASE WHEN pending + dead = 0 THEN 'detach'"
    "     ELSE format('kept: %s pending, %s dead', pending, dead) END;"
    "   EXCEPTION WHEN lock_not_available THEN outcome := 'busy';"
    "    WHEN unique_violation THEN moved := 0;"
    "     outcome := format('kept: %s dead, one of whose event ids %s already holds', dead, p_dead);"
    "   END;"
    "   RETURN NEXT;"
    "  END LOOP;"
    " END {$}",
};
/* clang-format on */

const size_t partitions_function_step_count =
    sizeof partitions_function_steps / sizeof partitions_function_steps[0];

int partitions_check_table(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    const char *params[] = {cfg->schema, cfg->table, cfg->col.created_at};
    PGresult *res = PQexecParams(conn,
                                 "SELECT c.relkind, c.relkind = 'p' AND pg_get_partkeydef(c.oid)"
                                 " = format('RANGE (%I)', $3::text) FROM pg_class c"
                                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
                                 " WHERE n.nspname = $1 AND c.relname = $2",
                                 3, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, why, why_size);
        PQclear(res);
        return -1;
    }
    int exists = PQntuples(res) == 1;
    int partitioned = exists && PQgetvalue(res, 0, 0)[0] == 'p';
    int by_created_at = exists && PQgetvalue(res, 0, 1)[0] == 't';
    PQclear(res);
    if (partitioned && !partitions_on(cfg)) {
        snprintf(why, why_size,
                 "it is a partitioned table, which init-db does not install into unless the "
                 "config has relay.partitions (then init-db makes the table itself: docs/operations.md, "
                 "Partitioned outbox); relay from a plain table, or create the relay's columns, "
                 "indexes and triggers on it yourself and register it in outbox_relay_schema "
                 "(docs/configuration.md, Column mapping)");
        return -1;
    }
    if (partitioned && !by_created_at) {
        snprintf(why, why_size,
                 "it is partitioned, but not by range of \"%s\" as relay.partitions needs; "
                 "init-db does not install into a partitioned table it did not make",
                 cfg->col.created_at);
        return -1;
    }
    return exists && !partitioned && partitions_on(cfg);
}

/* The partitions' lock (taken in the functions above), $1 the table */
#define PARTITIONS_KEY "pg_catalog.hashtext('outbox-relay partitions'), pg_catalog.hashtext($1)"

int partitions_make_ahead(PGconn *conn, const relay_config *cfg, lock_holder *held, char *why,
                          size_t why_size)
{
    char *sql = sql_render(cfg, "SELECT count(*) FROM {schema}.{n._partition_ahead}"
                                "($1, $2, $3::interval, $4::int)");
    char ahead[16];
    snprintf(ahead, sizeof ahead, "%d", cfg->partition_ahead);
    const char *params[] = {cfg->schema, cfg->table, cfg->partition_interval, ahead};
    PGresult *res = PQexecParams(conn, sql, 4, NULL, params, NULL, NULL, 0);
    free(sql);
    if (db_script()) /* init-db --print-sql: the call, its arguments written in */
        db_script_call(conn, cfg, "SELECT {schema}.{n._partition_ahead}", params, 4);
    int made = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        made = atoi(PQgetvalue(res, 0, 0));
    else
        db_error(conn, res, why, why_size);
    PQclear(res);
    if (made != 0 || !held)
        return made;
    /* none made: none missing, or the lock is held elsewhere (the function
     * then returns nothing), perhaps by a session that is no relay */
    char table[2 * SQL_NAME_MAX + 2];
    snprintf(table, sizeof table, "%s.%s", cfg->schema, cfg->table);
    const char *key[] = {table};
    return lock_holder_find(conn, PARTITIONS_KEY, 1, 1, key, held, why, why_size) < 0 ? -1 : 0;
}

/* init-db waits this long for another session to let go of the
 * partitions' lock: a relay's upkeep holds it for milliseconds. */
#define INIT_WAIT_MS 5000
#define INIT_NAP_MS 250

int partitions_init_ahead(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    lock_holder held = {0};
    for (int waited = 0;; waited += INIT_NAP_MS) {
        if (partitions_make_ahead(conn, cfg, &held, why, why_size) < 0)
            return -1;
        if (!held.pid)
            return 0;
        if (waited >= INIT_WAIT_MS)
            break;
        usleep(1000 * INIT_NAP_MS);
    }
    /* success here would be a lie: the partitions may all be missing */
    char who[LOCK_HOLDER_TEXT];
    lock_holder_text(&held, who, sizeof who);
    snprintf(why, why_size,
             "no partition could be made: for %d s the partitions' lock of %s.%s was held by "
             "%s%s; end that session (pg_terminate_backend) and run init-db again",
             INIT_WAIT_MS / 1000, cfg->schema, cfg->table, who,
             held.relay ? "" : ", which is not a relay (not this command's role)");
    return -1;
}

void partitions_keep_ahead(PGconn *conn, const relay_config *cfg, lock_squats *squats)
{
    char why[512] = "";
    lock_holder held = {0};
    int made = partitions_make_ahead(conn, cfg, &held, why, sizeof why);
    if (made < 0) {
        log_warn("partitions: making partitions ahead: %s", why);
        return;
    }
    if (made > 0)
        log_info("partitions: made %d partitions ahead", made);
    if (lock_squat_note(squats, LOCK_PARTITIONS, &held) < 0)
        log_info("partitions: the session that held the partitions' lock let go");
    if (held.pid && !held.relay) { /* said at every pass: partitions are not being made */
        lock_holder_text(&held, why, sizeof why);
        log_warn("partitions: the partitions' lock of %s.%s is held by %s, which is not a relay "
                 "(not the relay's role): no partition is made or retired until it lets go",
                 cfg->schema, cfg->table, why);
    }
}

PGresult *partitions_run_on(PGconn *conn, const relay_config *cfg, const char *before,
                            const char *part, const char *after)
{
    char *head = sql_render(cfg, before), *tail = sql_render(cfg, after);
    size_t cap = strlen(head) + strlen(part) + strlen(tail) + 1;
    char *sql = malloc(cap);
    snprintf(sql, cap, "%s%s%s", head, part, tail);
    PGresult *res = PQexec(conn, sql);
    free(sql);
    free(head);
    free(tail);
    return res;
}

/* The concurrent detach blocks no one while it waits for older
 * transactions (a claim's lasts up to max_transaction_ms), so it may wait
 * longer than the pass's other steps. */
#define DETACH_LOCK_TIMEOUT "SET lock_timeout = '30s'"

PGresult *partitions_detach(PGconn *conn, const relay_config *cfg, const char *part, int finalize)
{
    char ignored[256];
    db_exec(conn, DETACH_LOCK_TIMEOUT, ignored, sizeof ignored);
    PGresult *res = partitions_run_on(conn, cfg, "ALTER TABLE {table} DETACH PARTITION ", part,
                                      finalize ? " FINALIZE" : " CONCURRENTLY");
    db_exec(conn, PARTITIONS_LOCK_TIMEOUT, ignored, sizeof ignored);
    return res;
}
