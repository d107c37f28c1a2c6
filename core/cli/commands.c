#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "pgarray.h"
#include "schema.h"
#include "sql.h"
#include "wal_dead.h"
#include "wal_schema.h"

static PGconn *connect_or_report(const relay_config *cfg)
{
    char err[1024];
    PGconn *conn = db_connect(cfg, "outbox-relay", err, sizeof err);
    if (!conn)
        fprintf(stderr, "outbox-relay: %s\n", err);
    return conn;
}

int command_init_db(const relay_config *cfg, int reset_slot)
{
    if (reset_slot && cfg->source != SOURCE_WAL) {
        fprintf(stderr, "outbox-relay init-db: --reset-slot is for relay.source = \"wal\"\n");
        return 2;
    }
    PGconn *conn = connect_or_report(cfg);
    if (!conn)
        return 1;
    char err[1024];
    int rc = schema_install(conn, cfg, err, sizeof err);
    if (rc == 0 && cfg->source == SOURCE_WAL)
        rc = wal_schema_install(conn, cfg, reset_slot, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        return 1;
    }
    /* long names are shortened with a hash: say what the application calls */
    char schema[2 * SQL_NAME_MAX + 3], fn[SQL_NAME_MAX + 1], fn_quoted[2 * SQL_NAME_MAX + 3],
        channel[SQL_NAME_MAX + 1];
    sql_quote_ident(schema, sizeof schema, cfg->schema);
    sql_derived_name(cfg, "_enqueue", fn, sizeof fn);
    sql_quote_ident(fn_quoted, sizeof fn_quoted, fn);
    sql_channel_name(cfg, channel, sizeof channel);
    printf("schema version %d ready on %s.%s (enqueue with %s.%s, notify channel %s)\n",
           SCHEMA_VERSION, cfg->schema, cfg->table, schema, fn_quoted, channel);
    return 0;
}

/* clang-format off */
/* Dead rows back to pending (under on_dead = block, that releases the events
 * behind them: the claim finds no dead event ahead of them any more). */
static const char requeue_sql[] =
    "WITH r AS (UPDATE {table} SET {c.dead_at} = NULL, {c.attempts} = 0, {c.available_at} = now(),"
    " {c.lease_owner} = NULL, {c.lease_until} = NULL"
    " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL"
    " AND ($1 OR {c.event_id} = ANY($2::uuid[])) RETURNING 1)"
    " SELECT count(*) FROM r";
/* clang-format on */

int command_requeue(const relay_config *cfg, int all, char **ids, int count)
{
    if (all == (count > 0)) {
        fprintf(stderr, "outbox-relay requeue: give either --all or one or more event ids\n");
        return 2;
    }
    PGconn *conn = connect_or_report(cfg);
    if (!conn)
        return 1;
    if (cfg->source == SOURCE_WAL) { /* from the dead-letter table, through the outbox */
        int wal_rc = wal_command_requeue(conn, cfg, all, ids, count);
        PQfinish(conn);
        return wal_rc;
    }
    pgarray list;
    pgarray_init(&list);
    for (int i = 0; i < count; i++)
        pgarray_add(&list, ids[i], 1);
    char *sql = sql_render(cfg, requeue_sql);
    const char *params[] = {all ? "true" : "false", pgarray_text(&list)};
    PGresult *res = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);
    free(sql);
    int rc = 1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char err[1024];
        db_error(conn, res, err, sizeof err);
        fprintf(stderr, "outbox-relay: requeue: %s\n", err);
    } else {
        printf("requeued %s dead events\n", PQgetvalue(res, 0, 0));
        rc = 0;
    }
    PQclear(res);
    pgarray_free(&list);
    PQfinish(conn);
    return rc;
}
