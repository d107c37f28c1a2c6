#include "cursor/cursor_shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "db/db.h"
#include "db/sql.h"

/* relay.cursor.shards' range: 2^0 .. 2^10 */
#define LAYOUTS 11

/* SQL text reads best as written. */
/* clang-format off */
static const char rows_tmpl[] = "SELECT shard, xid::text, id FROM {schema}.{n._cursor}";
static const char raise_tmpl[] =
    "UPDATE {schema}.{n._cursor} SET xid = $1::xid8, id = $2::bigint, updated_at = now()"
    " WHERE shard = {cursor.shard} AND (xid, id) < ($1::xid8, $2::bigint)";
/* $1 the table, $2 a layout: its lock */
#define LAYOUT_KEY "hashtext('outbox-relay cursor layout'), hashtext($1::text || '/' || $2::text)"
/* the layouts of $2 whose lock another session holds */
static const char others_sql[] =
    "SELECT string_agg(n::text, ', ') FROM unnest($2::int[]) n"
    " WHERE NOT pg_try_advisory_xact_lock(hashtext('outbox-relay cursor layout'),"
    "  hashtext($1::text || '/' || n))";
/* clang-format on */

void cursor_shard_of_key(int key, int *shards, int *shard)
{
    int n = 1;
    while (n * 2 <= key)
        n *= 2;
    *shards = key ? n : 1;
    *shard = key ? key - n : 0;
}

static int log2_of(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return l;
}

static int below(const cursor_place *a, const cursor_place *b)
{
    return a->xid < b->xid || (a->xid == b->xid && a->id < b->id);
}

cursor_place cursor_shard_start(const cursor_saved *rows, size_t n, int shards, int shard)
{
    cursor_place best = {0, 0};
    int count[LAYOUTS] = {0};
    cursor_place lowest[LAYOUTS];
    for (size_t i = 0; i < n; i++) {
        const cursor_saved *r = &rows[i];
        if (r->shards <= shards) { /* the same layout or a coarser one: holds it or not */
            if ((shard & (r->shards - 1)) == r->shard && below(&best, &r->at))
                best = r->at;
        } else if ((r->shard & (shards - 1)) == shard) { /* a part of it */
            int l = log2_of(r->shards);
            if (count[l]++ == 0 || below(&r->at, &lowest[l]))
                lowest[l] = r->at;
        }
    }
    for (int l = log2_of(shards) + 1; l < LAYOUTS; l++)
        if (count[l] == (1 << l) / shards && below(&best, &lowest[l]))
            best = lowest[l];
    return best;
}

int cursor_shard_raise(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char *sql = sql_render(cfg, rows_tmpl);
    PGresult *res = PQexec(conn, sql);
    free(sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, err_size);
        PQclear(res);
        return -1;
    }
    size_t n = (size_t)PQntuples(res);
    cursor_saved *rows = calloc(n ? n : 1, sizeof *rows);
    for (size_t i = 0; i < n; i++) {
        cursor_shard_of_key(atoi(PQgetvalue(res, (int)i, 0)), &rows[i].shards, &rows[i].shard);
        rows[i].at.xid = strtoull(PQgetvalue(res, (int)i, 1), NULL, 10);
        rows[i].at.id = strtoll(PQgetvalue(res, (int)i, 2), NULL, 10);
    }
    PQclear(res);
    cursor_place start = cursor_shard_start(rows, n, cfg->cursor_shards, cfg->cursor_shard);
    free(rows);
    char xid[24], id[24];
    snprintf(xid, sizeof xid, "%" PRIu64, start.xid);
    snprintf(id, sizeof id, "%lld", start.id);
    const char *params[] = {xid, id};
    sql = sql_render(cfg, raise_tmpl);
    res = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);
    free(sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        db_error(conn, res, err, err_size);
    else if (atoi(PQcmdTuples(res)) > 0)
        log_info("cursor shard %d of %d starts at %s/%s, where another layout's shards had "
                 "finished",
                 cfg->cursor_shard, cfg->cursor_shards, xid, id);
    PQclear(res);
    return ok ? 0 : -1;
}

/* Who holds layout's lock in the way of this reader (any role may take it). */
static void layout_holder(PGconn *conn, const char *table, const char *layout, lock_holder *held)
{
    const char *params[] = {table, layout};
    char ignored[256];
    lock_holder_find(conn,
                     "pg_catalog.hashtext('outbox-relay cursor layout'),"
                     " pg_catalog.hashtext($1::text || '/' || $2::text)",
                     1, 2, params, held, ignored, sizeof ignored);
}

int cursor_shard_layout_lock(PGconn *conn, const relay_config *cfg, lock_holder *held, char *err,
                             size_t err_size)
{
    memset(held, 0, sizeof *held);
    char table[2 * SQL_NAME_MAX + 2], layout[16], others[128] = "{";
    snprintf(table, sizeof table, "%s.%s", cfg->schema, cfg->table);
    snprintf(layout, sizeof layout, "%d", cfg->cursor_shards);
    for (int n = 1; n <= 1 << (LAYOUTS - 1); n *= 2)
        if (n != cfg->cursor_shards)
            snprintf(others + strlen(others), sizeof others - strlen(others), "%s%d",
                     others[1] ? "," : "", n);
    strcat(others, "}");
    const char *mine[] = {table, layout}, *theirs[] = {table, others};
    PGresult *res = PQexecParams(conn, "SELECT pg_try_advisory_lock_shared(" LAYOUT_KEY ")", 2,
                                 NULL, mine, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, err_size);
    } else if (PQgetvalue(res, 0, 0)[0] != 't') {
        snprintf(err, err_size, "a reader of another layout of %s is starting", table);
        layout_holder(conn, table, layout, held);
        rc = 0;
    } else {
        PQclear(res);
        res = PQexecParams(conn, others_sql, 2, NULL, theirs, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK)
            db_error(conn, res, err, err_size);
        else if (!PQgetisnull(res, 0, 0)) {
            snprintf(err, err_size,
                     "a relay reads %s with relay.cursor.shards = %s: stop every reader of "
                     "the old layout first (docs/sources.md, Cursor mode)",
                     table, PQgetvalue(res, 0, 0));
            char first[16];
            snprintf(first, sizeof first, "%.*s", (int)strcspn(PQgetvalue(res, 0, 0), ","),
                     PQgetvalue(res, 0, 0));
            layout_holder(conn, table, first, held);
        }
        rc = PQresultStatus(res) != PGRES_TUPLES_OK ? -1 : PQgetisnull(res, 0, 0) ? 1 : 0;
    }
    PQclear(res);
    return rc;
}
