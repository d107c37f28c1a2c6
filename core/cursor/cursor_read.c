#include "cursor/cursor_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor/cursor_shard.h"
#include "db/db.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
/* The rows past $1/$2 placed below the oldest running transaction's id:
 * nothing can be added there any more (core/DESIGN.md). Fields in
 * event_row's order, times in ISO form and UTC (the session's, below). */
static const char fetch_tmpl[] =
    "SELECT o.cursor_xid::text AS place_xid, o.{c.id}, o.{c.event_id}::text,"
    " o.{c.aggregate_type}::text, o.{c.aggregate_id}::text, o.{c.event_type}::text, o.{c.payload},"
    " o.{c.headers}::text, o.{c.destination}::text, o.{c.created_at}, o.{c.aggregate_seq}::text,"
    " o.{c.event_version}::text, o.{c.available_at}"
    " FROM {table} o WHERE (o.cursor_xid, o.{c.id}) > ($1::xid8, $2::bigint)"
    " AND o.cursor_xid < pg_snapshot_xmin(pg_current_snapshot()) AND {cursor.in_shard}"
    /* qualified: the output's text form must not be what is sorted */
    " ORDER BY o.cursor_xid, o.{c.id} LIMIT $3";
static const char save_tmpl[] =
    "UPDATE {schema}.{n._cursor} SET xid = $1::xid8, id = $2::bigint, updated_at = now()"
    " WHERE shard = {cursor.shard}";
static const char load_tmpl[] =
    "SELECT xid::text, id FROM {schema}.{n._cursor} WHERE shard = {cursor.shard}";
/* clang-format on */

#define FETCH_NAME "obx_cursor_fetch"
/* The reader's lock, $1 the shard's key */
#define READER_KEY "pg_catalog.hashtext('outbox-relay cursor'), pg_catalog.hashtext($1)"
/* Fields after the place's two columns, in event_row's order. */
#define FIRST_FIELD 2

void cursor_reader_init(cursor_reader *r, const relay_config *cfg)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->fetch_sql = sql_render(cfg, fetch_tmpl);
    r->save_sql = sql_render(cfg, save_tmpl);
    r->load_sql = sql_render(cfg, load_tmpl);
}

void cursor_reader_free(cursor_reader *r)
{
    cursor_reader_close(r);
    free(r->fetch_sql);
    free(r->save_sql);
    free(r->load_sql);
}

void cursor_reader_close(cursor_reader *r)
{
    if (r->conn)
        PQfinish(r->conn);
    r->conn = NULL;
}

static int load_place(cursor_reader *r, cursor_place *at, char *err, size_t err_size)
{
    PGresult *res = PQexec(r->conn, r->load_sql);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        db_error(r->conn, res, err, err_size);
    else if (PQntuples(res) != 1)
        snprintf(err, err_size, "the cursor's row is missing: run `outbox-relay init-db -c %s`",
                 r->cfg->path);
    else {
        at->xid = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        at->id = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        rc = 0;
    }
    PQclear(res);
    return rc;
}

reader_open_result cursor_reader_open(cursor_reader *r, cursor_place *at, char *err,
                                      size_t err_size)
{
    cursor_reader_close(r);
    r->conn = db_connect(r->cfg, "outbox-relay cursor", err, err_size);
    if (!r->conn)
        return READER_RETRY;
    /* A hung reader's session ends after this idle (the relay asks at least
     * every poll interval, and every second while it waits), so that a
     * standby takes over. */
    int idle_ms = 3 * r->cfg->poll_interval_ms > 10000 ? 3 * r->cfg->poll_interval_ms : 10000;
    char setup[256];
    snprintf(setup, sizeof setup,
             "SET datestyle = ISO; SET timezone = 'UTC'; SET idle_session_timeout = %d", idle_ms);
    r->listening = 0;
    if (db_exec(r->conn, setup, err, err_size) < 0)
        return cursor_reader_close(r), READER_RETRY;
    /* one reader per shard (the unsharded one's key is the table's alone) */
    char key[2 * SQL_NAME_MAX + 16];
    snprintf(key, sizeof key, "%s.%s", r->cfg->schema, r->cfg->table);
    if (r->cfg->cursor_shards > 1)
        snprintf(key + strlen(key), sizeof key - strlen(key), "/%d", sql_cursor_shard_key(r->cfg));
    const char *params[] = {key};
    PGresult *res = PQexecParams(r->conn, "SELECT pg_try_advisory_lock(" READER_KEY ")", 1, NULL,
                                 params, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    int mine = ok && PQgetvalue(res, 0, 0)[0] == 't';
    if (!ok)
        db_error(r->conn, res, err, err_size);
    PQclear(res);
    if (!ok)
        return cursor_reader_close(r), READER_RETRY;
    if (!mine) {
        /* any role may take the key: say who, a relay or not (unknown if this fails) */
        char ignored[256];
        lock_holder_find(r->conn, READER_KEY, 1, 1, params, &r->holder, ignored, sizeof ignored);
        return cursor_reader_close(r), READER_BUSY;
    }
    /* no reader of another layout runs, so its rows stay as they are */
    int layout = cursor_shard_layout_lock(r->conn, r->cfg, &r->holder, err, err_size);
    if (layout == 0 && r->holder.pid && !r->holder.relay)
        return cursor_reader_close(r), READER_BUSY; /* no relay's layout: a squatter */
    memset(&r->holder, 0, sizeof r->holder);
    if (layout != 1 || cursor_shard_raise(r->conn, r->cfg, err, err_size) < 0)
        return cursor_reader_close(r), READER_RETRY;
    if (cursor_reader_listen(r, 1, err, err_size) < 0 || load_place(r, at, err, err_size) < 0)
        return cursor_reader_close(r), READER_RETRY;
    /* prepared once: the read runs up to a thousand times a second */
    res = PQprepare(r->conn, FETCH_NAME, r->fetch_sql, 3, NULL);
    ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        db_error(r->conn, res, err, err_size);
    PQclear(res);
    return ok ? READER_OPEN : (cursor_reader_close(r), READER_RETRY);
}

int cursor_reader_fetch(cursor_reader *r, const cursor_place *after, int limit, event_row **rows,
                        cursor_place *places, char *err, size_t err_size)
{
    char xid[24], id[24], lim[16];
    snprintf(xid, sizeof xid, "%" PRIu64, after->xid);
    snprintf(id, sizeof id, "%lld", after->id);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[] = {xid, id, lim};
    PGresult *res = PQexecPrepared(r->conn, FETCH_NAME, 3, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(r->conn, res, err, err_size);
        PQclear(res);
        return -1;
    }
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        const char *values[WF_COUNT];
        size_t lens[WF_COUNT];
        for (int f = 0; f < WF_COUNT; f++) {
            int null = PQgetisnull(res, i, FIRST_FIELD + f);
            values[f] = null ? NULL : PQgetvalue(res, i, FIRST_FIELD + f);
            lens[f] = null ? 0 : (size_t)PQgetlength(res, i, FIRST_FIELD + f);
        }
        rows[i] = event_row_new(values, lens);
        places[i].xid = strtoull(PQgetvalue(res, i, 0), NULL, 10);
        places[i].id = strtoll(PQgetvalue(res, i, 1), NULL, 10);
    }
    PQclear(res);
    return n;
}

int cursor_reader_save(cursor_reader *r, const cursor_place *at, char *err, size_t err_size)
{
    char xid[24], id[24];
    snprintf(xid, sizeof xid, "%" PRIu64, at->xid);
    snprintf(id, sizeof id, "%lld", at->id);
    const char *params[] = {xid, id};
    PGresult *res = PQexecParams(r->conn, r->save_sql, 2, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        db_error(r->conn, res, err, err_size);
    PQclear(res);
    return ok ? 0 : -1;
}

int cursor_reader_listen(cursor_reader *r, int on, char *err, size_t err_size)
{
    if (r->listening == on)
        return 0;
    if (db_listen(r->conn, r->cfg, on, err, err_size) < 0)
        return -1;
    r->listening = on;
    return 0;
}

int cursor_reader_wait(cursor_reader *r, int ms)
{
    return r->conn ? db_wait_notify(r->conn, ms) : -1;
}
