#include "cursor/cursor_partitions.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "db/db.h"
#include "db/partitions.h"
#include "db/sql.h"

/* Set on a partition once every row of it is finished: no row can be added
 * to it any more, so none can land after the check and be dropped unread. */
#define RETIRED "outbox_relay_retired"

/* SQL text reads best as written. */
/* clang-format off */
static const char list_tmpl[] =
    "SELECT b.part::text, b.detaching FROM {schema}.{n._partition_bounds}("
    " to_regclass(format('%I.%I', $1::text, $2::text))) b"
    " WHERE b.hi <= now() - $3::interval ORDER BY b.lo";
/* clang-format on */

/* The templates before and after the partition's name in the count of
 * the current layout's shards that are not finished with the partition: no
 * cursor row yet, or a row of the shard past its cursor. */
static void unfinished_sql(const relay_config *cfg, char *head, char *tail, size_t cap /* each */)
{
    int n = cfg->cursor_shards;
    snprintf(
        head, cap,
        "SELECT count(*) FROM generate_series(0, %d) k"
        " LEFT JOIN {schema}.{n._cursor} c ON c.shard = CASE WHEN %d = 1 THEN 0 ELSE %d + k END"
        " WHERE c.shard IS NULL OR EXISTS (SELECT 1 FROM ",
        n - 1, n, n);
    if (n == 1)
        snprintf(tail, cap, " o WHERE (o.cursor_xid, o.{c.id}) > (c.xid, c.id))");
    else
        snprintf(tail, cap,
                 " o WHERE " SQL_CURSOR_HASH("o.") " = k"
                                                   " AND (o.cursor_xid, o.{c.id}) > (c.xid, c.id))",
                 n - 1);
}

/* A step's result on part, cleared: 0, or -1 after logging why. */
static int step(PGconn *conn, PGresult *res, const char *what, const char *part)
{
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        char why[512];
        db_error(conn, res, why, sizeof why);
        log_info("partitions: %s %s: %s; next pass", what, part, why);
    }
    PQclear(res);
    return ok ? 0 : -1;
}

/* Shards not finished with part, or -1 after logging why. */
static long long unfinished(PGconn *conn, const relay_config *cfg, const char *part)
{
    char head[512], tail[512];
    unfinished_sql(cfg, head, tail, sizeof head);
    PGresult *res = partitions_run_on(conn, cfg, head, part, tail);
    long long n = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        n = atoll(PQgetvalue(res, 0, 0));
    else {
        char why[512];
        db_error(conn, res, why, sizeof why);
        log_warn("partitions: cannot check %s: %s", part, why);
    }
    PQclear(res);
    return n;
}

/* Closes part to new rows if every row of it is finished, in one
 * transaction: 1 closed, 0 not (unfinished, or in use), -1 lost. */
static int close_finished(PGconn *conn, const relay_config *cfg, const char *part)
{
    char ignored[256];
    if (db_exec(conn, "BEGIN", ignored, sizeof ignored) < 0)
        return -1;
    PGresult *res = partitions_run_on(conn, cfg, "ALTER TABLE ", part,
                                      " DROP CONSTRAINT IF EXISTS " RETIRED
                                      ", ADD CONSTRAINT " RETIRED " CHECK (false) NOT VALID");
    int closed = step(conn, res, "close", part) == 0 && unfinished(conn, cfg, part) == 0;
    if (db_exec(conn, closed ? "COMMIT" : "ROLLBACK", ignored, sizeof ignored) < 0)
        return db_lost(conn) ? -1 : 0;
    return closed;
}

/* Detaches (or finishes detaching) part concurrently and drops it. */
static int retire(PGconn *conn, const relay_config *cfg, const char *part, int detaching)
{
    if (step(conn, partitions_detach(conn, cfg, part, detaching), "detach", part) < 0)
        return 0;
    return step(conn, partitions_run_on(conn, cfg, "DROP TABLE ", part, ""), "drop", part) == 0;
}

int cursor_partitions_retire(PGconn *conn, const relay_config *cfg)
{
    char err[512];
    if (db_exec(conn, PARTITIONS_LOCK_TIMEOUT, err, sizeof err) < 0)
        return -1;
    char *sql = sql_render(cfg, list_tmpl);
    const char *params[] = {cfg->schema, cfg->table, cfg->partition_keep};
    PGresult *res = PQexecParams(conn, sql, 3, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, sizeof err);
        log_warn("partitions: %s", err);
        PQclear(res);
        return db_lost(conn) ? -1 : 0;
    }
    int dropped = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *part = PQgetvalue(res, i, 0);
        long long open = unfinished(conn, cfg, part); /* first without a lock: the usual answer */
        if (open > 0)
            log_debug("partitions: %s is past keep (%s) but %lld shards have not relayed it "
                      "yet",
                      part, cfg->partition_keep, open);
        if (open == 0 && close_finished(conn, cfg, part) == 1)
            dropped += retire(conn, cfg, part, PQgetvalue(res, i, 1)[0] == 't');
    }
    PQclear(res);
    db_exec(conn, "RESET lock_timeout", err, sizeof err); /* the session writes dead letters too */
    if (dropped > 0)
        log_info("partitions: dropped %d relayed partitions older than %s", dropped,
                 cfg->partition_keep);
    return db_lost(conn) ? -1 : 0;
}
