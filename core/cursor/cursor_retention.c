#include "cursor/cursor_retention.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "cursor/cursor_partitions.h"
#include "db/db.h"
#include "db/partitions.h"
#include "db/sql.h"
#include "window/window_side.h"

/* a round deletes at most ROUNDS x CHUNK rows, CHUNK per statement */
#define CHUNK_TEXT "5000"
#define CHUNK 5000
#define ROUNDS 20

/* SQL text reads best as written. */
/* clang-format off */
/* Of the shard's first rows in the cursor's order up to its saved cursor (every one
 * of them finished: published or in the dead-letter table), those older
 * than $1, by id (ids are unique across a partitioned outbox's partitions,
 * ctids are not). Rows are deleted from the front of the order, so a
 * statement reads at most a chunk of the index whatever the table holds. */
static const char delete_tmpl[] =
    "DELETE FROM {table} WHERE {c.id} IN (SELECT f.id FROM (SELECT o.{c.id} AS id,"
    " o.{c.created_at} AS created_at FROM {table} o, {schema}.{n._cursor} c"
    " WHERE c.shard = {cursor.shard} AND (o.cursor_xid, o.{c.id}) <= (c.xid, c.id)"
    " AND {cursor.in_shard}"
    " ORDER BY o.cursor_xid, o.{c.id} LIMIT " CHUNK_TEXT ") f"
    " WHERE f.created_at < now() - $1::interval)";
/* clang-format on */

void cursor_retention_upkeep(void *arg, relay_state *st, PGconn **db)
{
    (void)arg;
    const relay_config *cfg = st->cfg;
    char err[512], keep[32];
    if (partitions_on(cfg)) { /* a whole partition at a time, never a row */
        if (cfg->partition_keep && window_side_session(db, cfg, err, sizeof err))
            cursor_partitions_retire(*db, cfg);
        return;
    }
    if (cfg->retention == RETAIN_MARK && cfg->retention_hours == 0)
        return;
    snprintf(keep, sizeof keep, "%d hours",
             cfg->retention == RETAIN_DELETE ? 0 : cfg->retention_hours);
    if (!window_side_session(db, cfg, err, sizeof err)) {
        log_warn("cursor retention: %s", err);
        return;
    }
    char *sql = sql_render(cfg, delete_tmpl);
    const char *params[] = {keep};
    for (int round = 0; round < ROUNDS && !atomic_load(&st->stop); round++) {
        PGresult *res = PQexecParams(*db, sql, 1, NULL, params, NULL, NULL, 0);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        long deleted = ok ? atol(PQcmdTuples(res)) : 0;
        if (!ok) {
            db_error(*db, res, err, sizeof err);
            log_warn("cursor retention: %s", err);
        }
        PQclear(res);
        if (deleted < CHUNK)
            break;
    }
    free(sql);
}
