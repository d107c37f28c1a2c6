#include "cursor/cursor_kind.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/service_notify.h"
#include "cursor/cursor_schema.h"
#include "cursor/cursor_source.h"
#include "db/db.h"
#include "db/sql.h"
#include "host/source_thread.h"
#include "window/dead_purge.h"
#include "window/dead_table.h"

/* SQL text reads best as written. */
/* clang-format off */
/* The rows past the cursor, the oldest one's age, the cursor's last save,
 * and the dead letters. */
static const char status_tmpl[] =
    "SELECT (SELECT count(*) FROM {table} o WHERE (o.cursor_xid, o.{c.id}) > (c.xid, c.id)"
    "   AND {cursor.in_shard}),"
    " coalesce((SELECT extract(epoch FROM now() - min(o.{c.created_at})) FROM {table} o"
    "   WHERE (o.cursor_xid, o.{c.id}) > (c.xid, c.id) AND {cursor.in_shard}), 0),"
    " c.xid::text || '/' || c.id, extract(epoch FROM now() - c.updated_at),"
    " (SELECT count(*) FROM {schema}.{n._dead_letter})"
    " FROM {schema}.{n._cursor} c WHERE c.shard = {cursor.shard}";
/* The backlog gauges: past the cursor, nothing held in the table, the dead
 * letters. */
static const char backlog_tmpl[] =
    "SELECT count(*), 0, (SELECT count(*) FROM {schema}.{n._dead_letter}),"
    " coalesce(extract(epoch FROM now() - min(o.{c.created_at})), 0)"
    " FROM {table} o, {schema}.{n._cursor} c WHERE c.shard = {cursor.shard}"
    " AND (o.cursor_xid, o.{c.id}) > (c.xid, c.id) AND {cursor.in_shard}";
/* clang-format on */

static void describe(const relay_config *cfg, int drain, char *line, size_t line_size)
{
    snprintf(line, line_size, "source cursor, ordering %s, %zu outputs%s",
             cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none", cfg->output_count,
             drain ? ", drain" : "");
}

static void *start(relay_state *st, const char *payload_type)
{
    (void)payload_type; /* rows are read as text, as WAL mode's */
    void *run = source_thread_start(st, cursor_run);
    notify_send("READY=1\nSTATUS=relaying from the outbox's cursor");
    return run;
}

static int status(PGconn *conn, const relay_config *cfg, json_t *json)
{
    char *sql = sql_render(cfg, status_tmpl);
    PGresult *res = PQexec(conn, sql);
    free(sql);
    int rc = 1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        char err[1024];
        if (PQresultStatus(res) == PGRES_TUPLES_OK)
            snprintf(err, sizeof err,
                     "the cursor's row is missing: run `outbox-relay init-db -c %s`", cfg->path);
        else
            db_error(conn, res, err, sizeof err);
        fprintf(stderr, "outbox-relay: status: %s\n", err);
    } else {
        long long pending = atoll(PQgetvalue(res, 0, 0)), dead = atoll(PQgetvalue(res, 0, 4));
        double oldest = atof(PQgetvalue(res, 0, 1)), saved = atof(PQgetvalue(res, 0, 3));
        const char *at = PQgetvalue(res, 0, 2);
        if (json)
            json_object_update_new(
                json, json_pack("{s:s,s:I,s:f,s:s,s:f,s:I}", "source", "cursor", "pending",
                                (json_int_t)pending, "oldest_pending_seconds", oldest, "cursor", at,
                                "cursor_saved_seconds_ago", saved, "dead", (json_int_t)dead));
        else
            printf("source:                 cursor (at %s, saved %.1f s ago)\n"
                   "pending:                %lld\noldest pending (s):     %.3f\n"
                   "dead:                   %lld\n",
                   at, saved, pending, oldest, dead);
        rc = 0;
    }
    PQclear(res);
    return rc;
}

const source_kind cursor_kind = {
    .name = "cursor",
    .thread = "cursor-reader",
    .preflight = cursor_preflight,
    .install = cursor_schema_install,
    .describe = describe,
    .start = start,
    /* no .stopping: the reader sees the stop and settles up to the deadline */
    .join = source_thread_join,
    .finish = source_thread_finish,
    .status = status,
    .dead_events = dead_table_events_sql,
    .backlog = backlog_tmpl,
    /* passed by the cursor and never dead-lettered */
    .replayable = "(o.cursor_xid, o.{c.id}) <= (SELECT c.xid, c.id FROM {schema}.{n._cursor} c"
                  " WHERE c.shard = {cursor.shard}) AND {cursor.in_shard}"
                  " AND NOT EXISTS (SELECT 1 FROM {schema}.{n._dead_letter} d"
                  " WHERE d.{c.event_id} = o.{c.event_id})",
    /* the read, retention's range deletes, the kept place, the dead letters */
    .rights = ":SELECT,DELETE _cursor:SELECT,UPDATE _dead_letter:SELECT,INSERT,UPDATE",
    .requeue = dead_table_requeue,
    .purge_select = dead_table_purge_select,
    .purge_delete = dead_table_purge_delete,
};
