/* WAL mode's part of init-db: what the server must allow, the publication,
 * the dead-letter table, outbox_emit() and the logical replication slot. */
#include "wal/wal_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/dead_letter.h"
#include "db/schema.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
static const char *const wal_steps[] = {
    "SELECT pg_advisory_xact_lock(hashtext('outbox-relay init-db'))",
    /*
     * outbox_emit: an event with no row left behind. It inserts into the
     * outbox as its caller (SECURITY INVOKER: only a role that may INSERT
     * into the outbox can emit), and the trigger below deletes that row again
     * in the same statement: the insert is in the WAL and decoded like any
     * other, the table stays empty. A logical message would not do: any role
     * that can connect may call pg_logical_emit_message, and the decoder
     * cannot tell who wrote one (relay.wal.accept_logical_messages).
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._emit_drop}() RETURNS trigger LANGUAGE plpgsql"
    " SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {$} BEGIN"
    " EXECUTE format('DELETE FROM %I.%I WHERE %I = ($1).%I', TG_TABLE_SCHEMA, TG_TABLE_NAME,"
    " TG_ARGV[0], TG_ARGV[0]) USING NEW; RETURN NULL; END {$}",
    /* fires only for outbox_emit's own insert, and deletes only that row,
     * which its caller was allowed to insert */
    "DROP TRIGGER IF EXISTS {n._emit_drop} ON {table}",
    "CREATE TRIGGER {n._emit_drop} AFTER INSERT ON {table} FOR EACH ROW"
    " WHEN (current_setting('outbox_relay.emitting', true) = 'on')"
    " EXECUTE FUNCTION {schema}.{n._emit_drop}({lit.c.id})",
    /*
     * pgoutput sends every column as text, and the walsender cannot send a
     * value whose text passes 1 GB: it fails, and the stream replays that
     * transaction forever. So a row whose text form passes half of that is
     * refused at insert, with the reason. The WHEN costs ordinary rows
     * nothing: 8 kB of uncompressed values cannot print past about 70 MB (a
     * numeric of 131,072 digits is stored in about 16 bytes); compressed
     * values (copied from another table) are always measured.
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._wal_guard}() RETURNS trigger LANGUAGE plpgsql"
    " SET search_path = pg_catalog, pg_temp AS {$}"
    " DECLARE n bigint; BEGIN"
    " BEGIN n := octet_length(row_to_json(NEW)::text); EXCEPTION WHEN OTHERS THEN n := NULL; END;"
    " IF n IS NULL OR n > 536870912 THEN RAISE EXCEPTION"
    " 'outbox row too large for WAL mode: % as text, over the 512 MB the stream can carry',"
    " coalesce(n || ' bytes', 'over 1 GB') USING ERRCODE = 'program_limit_exceeded',"
    " HINT = 'the walsender sends each row as text; keep large documents outside the outbox';"
    " END IF; RETURN NEW; END {$}",
    "DROP TRIGGER IF EXISTS {n._wal_guard} ON {table}",
    "CREATE TRIGGER {n._wal_guard} BEFORE INSERT ON {table} FOR EACH ROW"
    " WHEN (pg_column_size(NEW.*) > 8192 OR pg_column_compression(NEW.{c.payload}) IS NOT NULL"
    " OR pg_column_compression(NEW.{c.headers}) IS NOT NULL)"
    " EXECUTE FUNCTION {schema}.{n._wal_guard}()",
    /* the version 2 signature (see enqueue.c) */
    "DROP FUNCTION IF EXISTS {schema}.{n._emit}(text, text, text, {table}.{c.payload}%TYPE,"
    " {table}.{c.headers}%TYPE, text)",
    /* its insert takes the aggregate's lock and number as any other (the
     * order trigger); the options are outbox_enqueue's */
    "CREATE OR REPLACE FUNCTION {schema}.{n._emit}("
    " p_aggregate_type text, p_aggregate_id text, p_event_type text,"
    " p_payload {table}.{c.payload}%TYPE,"
    " p_headers {table}.{c.headers}%TYPE DEFAULT NULL, p_destination text DEFAULT NULL,"
    " p_event_version text DEFAULT NULL, p_deliver_after interval DEFAULT NULL,"
    " p_idempotency_key text DEFAULT NULL)"
    " RETURNS uuid LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS {$}"
    " DECLARE v_id uuid := gen_random_uuid(); w uuid; BEGIN"
    " IF p_idempotency_key IS NOT NULL THEN"
    "  INSERT INTO {schema}.{n._idempotency} (key, event_id) VALUES (p_idempotency_key, v_id)"
    "  ON CONFLICT (key) DO NOTHING RETURNING event_id INTO w;"
    "  IF w IS NULL THEN"
    "   SELECT event_id INTO w FROM {schema}.{n._idempotency} WHERE key = p_idempotency_key;"
    "   RETURN w;"
    "  END IF;"
    " END IF;"
    " PERFORM set_config('outbox_relay.emitting', 'on', true);"
    " INSERT INTO {table} ({c.event_id}, {c.aggregate_type}, {c.aggregate_id}, {c.event_type},"
    " {c.payload}, {c.headers}, {c.destination}, {c.event_version}, {c.available_at})"
    " VALUES (v_id, p_aggregate_type, p_aggregate_id, p_event_type, p_payload, p_headers,"
    " p_destination, p_event_version, now() + coalesce(greatest(p_deliver_after, '0'), '0'));"
    " PERFORM set_config('outbox_relay.emitting', '', true);"
    " RETURN v_id; END {$}",
};

/* What the server and the role must allow, as one row. */
static const char prereq_sql[] =
    "SELECT current_setting('wal_level'), r.rolreplication OR r.rolsuper, current_user,"
    " current_setting('max_replication_slots')::int"
    " FROM pg_roles r WHERE r.rolname = current_user";

static const char slot_sql[] =
    "SELECT plugin, database = current_database(), coalesce(wal_status, ''),"
    " coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = $1 AND slot_type = 'logical'";
/* clang-format on */

int wal_prerequisites(PGconn *conn, char *err, size_t err_size)
{
    PGresult *res = PQexec(conn, prereq_sql);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        db_error(conn, res, err, err_size);
    } else {
        const char *level = PQgetvalue(res, 0, 0), *user = PQgetvalue(res, 0, 2);
        int may_replicate = PQgetvalue(res, 0, 1)[0] == 't';
        int n = snprintf(err, err_size, "WAL mode cannot run here:");
        if (strcmp(level, "logical") != 0)
            n += snprintf(err + n, err_size - n,
                          " wal_level is \"%s\", it must be \"logical\" (ALTER SYSTEM SET "
                          "wal_level = logical; then restart PostgreSQL);",
                          level);
        if (!may_replicate && n > 0 && (size_t)n < err_size)
            n += snprintf(err + n, err_size - n,
                          " role \"%s\" lacks the REPLICATION attribute (ALTER ROLE \"%s\" "
                          "REPLICATION;);",
                          user, user);
        if (atoi(PQgetvalue(res, 0, 3)) == 0 && n > 0 && (size_t)n < err_size)
            snprintf(err + n, err_size - n,
                     " max_replication_slots is 0 (set it to at least 1 and restart);");
        rc = strcmp(level, "logical") == 0 && may_replicate && atoi(PQgetvalue(res, 0, 3)) > 0 ? 0
                                                                                               : -1;
    }
    PQclear(res);
    return rc;
}

/* The publication: the outbox table, inserts only, and only the rows of
 * relay.wal.row_filter when set (a shard). Made what the config says every
 * time: a filter added by hand is replaced (or removed) here, so that two
 * shards cannot drift apart from their configs. */
static int install_publication(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    char pub[2 * SQL_NAME_MAX + 3];
    sql_quote_ident(pub, sizeof pub, cfg->wal_publication);
    const char *params[] = {cfg->wal_publication};
    PGresult *res = PQexecParams(conn, "SELECT 1 FROM pg_publication WHERE pubname = $1", 1, NULL,
                                 params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, why, why_size);
        PQclear(res);
        return -1;
    }
    int exists = PQntuples(res) > 0;
    PQclear(res);
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl,
             exists ? "ALTER PUBLICATION %s SET TABLE {table}"
                    : "CREATE PUBLICATION %s FOR TABLE {table}",
             pub);
    char *head = sql_render(cfg, tmpl);
    /* through the root: a partitioned outbox's inserts are decoded under the
     * outbox's name, not each partition's (a plain table is its own root) */
    /* the filter is the operator's SQL as written: not a template */
    const char *filter = cfg->wal_row_filter ? cfg->wal_row_filter : "";
    size_t size = strlen(head) + strlen(filter) + 128;
    char *sql = malloc(size);
    snprintf(sql, size, "%s%s%s%s%s", head, filter[0] ? " WHERE (" : "", filter,
             filter[0] ? ")" : "",
             exists ? "" : " WITH (publish = 'insert', publish_via_partition_root = true)");
    free(head);
    int rc = db_exec(conn, sql, why, why_size);
    free(sql);
    if (rc == 0 && exists) {
        char alter[256];
        snprintf(alter, sizeof alter,
                 "ALTER PUBLICATION %s SET (publish = 'insert', publish_via_partition_root = true)",
                 pub);
        rc = db_exec(conn, alter, why, why_size);
    }
    return rc;
}

int wal_slot_state(PGconn *conn, const relay_config *cfg, char *wal_status, size_t status_size,
                   int *active_pid, char *err, size_t err_size)
{
    const char *params[] = {cfg->wal_slot};
    PGresult *res = PQexecParams(conn, slot_sql, 1, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, err_size);
    } else if (PQntuples(res) == 0) {
        snprintf(err, err_size,
                 "replication slot \"%s\" does not exist: run `outbox-relay init-db -c %s`",
                 cfg->wal_slot, cfg->path);
        rc = 1;
    } else if (strcmp(PQgetvalue(res, 0, 0), "pgoutput") != 0 || PQgetvalue(res, 0, 1)[0] != 't') {
        snprintf(err, err_size,
                 "replication slot \"%s\" belongs to another database or plugin (%s); choose "
                 "another relay.wal.slot",
                 cfg->wal_slot, PQgetvalue(res, 0, 0));
    } else {
        snprintf(wal_status, status_size, "%s", PQgetvalue(res, 0, 2));
        *active_pid = atoi(PQgetvalue(res, 0, 3));
        rc = 0;
    }
    PQclear(res);
    return rc;
}

/* The slot, created after the publication is committed (pgoutput looks the
 * publication up as of each change's time). With reset, dropped first. */
static int install_slot(PGconn *conn, const relay_config *cfg, int reset, char *why,
                        size_t why_size)
{
    char status[32] = "";
    int pid = 0;
    int rc = wal_slot_state(conn, cfg, status, sizeof status, &pid, why, why_size);
    if (rc < 0)
        return -1;
    const char *params[] = {cfg->wal_slot};
    if (rc == 0 && reset) {
        if (pid) {
            snprintf(why, why_size,
                     "replication slot \"%s\" is in use by a running relay (server pid %d): "
                     "stop it before --reset-slot",
                     cfg->wal_slot, pid);
            return -1;
        }
        PGresult *res = PQexecParams(conn, "SELECT pg_drop_replication_slot($1)", 1, NULL, params,
                                     NULL, NULL, 0);
        rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 1 : -1;
        if (rc < 0)
            db_error(conn, res, why, why_size);
        PQclear(res);
        if (rc < 0)
            return -1;
        printf("replication slot %s dropped: events committed since it stopped being read "
               "and before now are not relayed\n",
               cfg->wal_slot);
    }
    if (rc == 0) {
        if (strcmp(status, "lost") == 0) {
            snprintf(why, why_size,
                     "replication slot \"%s\" was invalidated (its WAL was removed): run "
                     "`outbox-relay init-db --reset-slot -c %s` (see docs/sources.md, Slot safety)",
                     cfg->wal_slot, cfg->path);
            return -1;
        }
        return 0;
    }
    PGresult *res = PQexecParams(conn,
                                 "SELECT lsn FROM pg_create_logical_replication_slot($1, "
                                 "'pgoutput')",
                                 1, NULL, params, NULL, NULL, 0);
    rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0)
        db_error(conn, res, why, why_size);
    else
        printf("replication slot %s created at %s\n", cfg->wal_slot, PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

/* init-db --print-sql: the slot, if it is missing, after the transaction
 * (a slot cannot be made in one that wrote). */
static int script_slot(PGconn *conn, const relay_config *cfg, char *why, size_t why_size)
{
    char status[32] = "";
    int pid = 0, rc = wal_slot_state(conn, cfg, status, sizeof status, &pid, why, why_size);
    if (rc == 1) {
        const char *args[] = {cfg->wal_slot, "pgoutput"};
        db_script_call(conn, cfg, "SELECT pg_catalog.pg_create_logical_replication_slot", args, 2);
    }
    return rc < 0 ? -1 : 0;
}

/* WAL mode keeps an event's columns apart (its dead-letter table has one
 * column each, and outbox_emit writes each): one table column mapped to two
 * of them (the poll source allows it, e.g. an event type that is its own
 * aggregate) is refused with the pair. */
static int refuse_shared_columns(const relay_config *cfg, char *why, size_t why_size)
{
    const struct {
        const char *role, *column;
    } cols[] = {{"event_id", cfg->col.event_id},
                {"aggregate_type", cfg->col.aggregate_type},
                {"aggregate_id", cfg->col.aggregate_id},
                {"event_type", cfg->col.event_type},
                {"payload", cfg->col.payload},
                {"headers", cfg->col.headers},
                {"destination", cfg->col.destination},
                {"created_at", cfg->col.created_at},
                {"event_version", cfg->col.event_version}};
    const size_t n = sizeof cols / sizeof cols[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(cols[i].column, cols[j].column) == 0)
                return snprintf(why, why_size,
                                "database.columns maps %s and %s to one column, \"%s\": WAL mode "
                                "needs a column of its own for each (poll mode allows it)",
                                cols[i].role, cols[j].role, cols[i].column),
                       -1;
    return 0;
}

int wal_schema_install(PGconn *conn, const relay_config *cfg, int reset_slot, char *err,
                       size_t err_size)
{
    char why[1024];
    if (refuse_shared_columns(cfg, why, sizeof why) < 0 ||
        wal_prerequisites(conn, why, sizeof why) < 0)
        goto fail;
    if (db_exec(conn, "BEGIN", why, sizeof why) < 0)
        goto fail;
    /* then the dead-letter table: the only write per event in WAL mode,
     * and only for a failed one */
    if (schema_run_steps(conn, cfg, wal_steps, sizeof wal_steps / sizeof wal_steps[0], why,
                         sizeof why) < 0 ||
        schema_run_steps(conn, cfg, dead_letter_steps, dead_letter_step_count, why, sizeof why) < 0)
        goto rollback;
    if (install_publication(conn, cfg, why, sizeof why) < 0)
        goto rollback;
    if (db_exec(conn, "COMMIT", why, sizeof why) < 0 ||
        (db_script() ? script_slot(conn, cfg, why, sizeof why)
                     : install_slot(conn, cfg, reset_slot, why, sizeof why)) < 0)
        goto fail;
    return 0;
rollback:;
    char ignored[256];
    db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
fail:
    snprintf(err, err_size, "init-db (WAL mode) failed for %s.%s: %s", cfg->schema, cfg->table,
             why);
    return -1;
}

int wal_schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char why[768], status[32] = "";
    int pid = 0;
    if (wal_prerequisites(conn, why, sizeof why) < 0) {
        snprintf(err, err_size, "%s", why);
        return -1;
    }
    if (wal_slot_state(conn, cfg, status, sizeof status, &pid, err, err_size) != 0)
        return -1;
    /* from the catalog: a statement on the table itself took 85 ms to plan here */
    char dead[SQL_NAME_MAX + 1], guard[SQL_NAME_MAX + 1];
    sql_derived_name(cfg, "_dead_letter", dead, sizeof dead);
    sql_derived_name(cfg, "_wal_guard", guard, sizeof guard);
    const char *params[] = {cfg->schema, dead, cfg->table, guard};
    PGresult *res = PQexecParams(conn,
                                 "SELECT 1 FROM pg_attribute WHERE attname = 'dl_raw'"
                                 " AND NOT attisdropped AND attrelid = to_regclass(format('%I.%I',"
                                 " $1::text, $2::text)) AND EXISTS (SELECT 1 FROM pg_trigger"
                                 " WHERE tgname = $4 AND tgenabled <> 'D' AND tgrelid ="
                                 " to_regclass(format('%I.%I', $1::text, $3::text)))",
                                 4, NULL, params, NULL, NULL, 0);
    int current = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    PQclear(res);
    if (!current) {
        snprintf(
            err, err_size,
            "WAL mode's objects of %s.%s (the dead-letter table, the size guard) are missing or "
            "from an older version: run "
            "`outbox-relay init-db -c %s`",
            cfg->schema, cfg->table, cfg->path);
        return -1;
    }
    if (strcmp(status, "lost") == 0) {
        snprintf(err, err_size,
                 "replication slot \"%s\" was invalidated (the server removed WAL it still "
                 "needed: max_slot_wal_keep_size); events since then cannot be read from it. "
                 "Run `outbox-relay init-db --reset-slot -c %s` (see docs/sources.md, Slot safety)",
                 cfg->wal_slot, cfg->path);
        return -1;
    }
    return 0;
}
