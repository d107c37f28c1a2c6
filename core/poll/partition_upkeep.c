#include "poll/partition_upkeep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "db/db.h"
#include "db/partitions.h"
#include "db/sql.h"

static int command_ok(PGconn *conn, PGresult *res, const char *what, const char *part)
{
    ExecStatusType st = PQresultStatus(res);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        char why[512];
        db_error(conn, res, why, sizeof why);
        log_warn("partitions: %s %s: %s", what, part, why);
    }
    PQclear(res);
    return ok;
}

/* After the detach: drops the table when it still holds no unpublished
 * row, else (a row made pending meanwhile) attaches it again: never is a
 * pending or dead row dropped. Returns 1 when dropped. */
static int drop_detached(PGconn *conn, const relay_config *cfg, const char *part, const char *lo,
                         const char *hi)
{
    PGresult *res = partitions_run_on(conn, cfg, "SELECT count(*) FROM ", part,
                                      " WHERE {c.published_at} IS NULL");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        command_ok(conn, res, "count unpublished rows of detached", part);
        return 0;
    }
    long long unpublished = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (unpublished == 0)
        return command_ok(conn, partitions_run_on(conn, cfg, "DROP TABLE ", part, ""), "drop",
                          part);
    /* an empty lo: MINVALUE (a converted table's partition) */
    char *lo_lit = lo[0] ? PQescapeLiteral(conn, lo, strlen(lo)) : NULL;
    char *hi_lit = PQescapeLiteral(conn, hi, strlen(hi));
    /* literals from the server's own bound text: no braces to render */
    char bounds[256];
    snprintf(bounds, sizeof bounds, " FOR VALUES FROM (%s) TO (%s)", lo_lit ? lo_lit : "MINVALUE",
             hi_lit ? hi_lit : "NULL");
    PQfreemem(lo_lit);
    PQfreemem(hi_lit);
    log_warn("partitions: %s had %lld unpublished rows after its detach: attaching it again", part,
             unpublished);
    command_ok(conn,
               partitions_run_on(conn, cfg, "ALTER TABLE {table} ATTACH PARTITION ", part, bounds),
               "attach again", part);
    return 0;
}

/* Detaches (or finishes a detach of) part concurrently, then drops it. */
static int retire_one(PGconn *conn, const relay_config *cfg, const char *part, const char *lo,
                      const char *hi, int finalize)
{
    int detached = command_ok(conn, partitions_detach(conn, cfg, part, finalize), "detach", part);
    return detached ? drop_detached(conn, cfg, part, lo, hi) : 0;
}

int partition_upkeep(PGconn *conn, const relay_config *cfg, lock_squats *squats, char *err,
                     size_t err_size)
{
    if (db_exec(conn, PARTITIONS_LOCK_TIMEOUT, err, err_size) < 0)
        return -1;
    partitions_keep_ahead(conn, cfg, squats);
    if (!cfg->partition_keep)
        return db_lost(conn) ? -1 : 0;
    /* dead rows move to the dead-letter table, unless each holds its aggregate */
    char dead_letter[SQL_NAME_MAX + 1];
    sql_derived_name(cfg, "_dead_letter", dead_letter, sizeof dead_letter);
    char *sql = sql_render(
        cfg, "SELECT part, lo, hi, outcome, moved FROM"
             " {schema}.{n._partition_retire}($1, $2, $3::interval,"
             " CASE WHEN $4::bool THEN to_regclass(format('%I.%I', $1::text, $5::text)) END)");
    const char *params[] = {cfg->schema, cfg->table, cfg->partition_keep,
                            cfg->on_dead == DEAD_BLOCK ? "false" : "true", dead_letter};
    PGresult *res = PQexecParams(conn, sql, 5, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, err_size);
        PQclear(res);
        return -1;
    }
    int dropped = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *part = PQgetvalue(res, i, 0), *outcome = PQgetvalue(res, i, 3);
        if (atoll(PQgetvalue(res, i, 4)) > 0)
            log_info("partitions: moved %s dead events of %s to the dead-letter table",
                     PQgetvalue(res, i, 4), part);
        if (strcmp(outcome, "detach") == 0 || strcmp(outcome, "finalize") == 0)
            dropped += retire_one(conn, cfg, part, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                                  outcome[0] == 'f');
        else
            log_info("partitions: %s is past keep (%s) but %s", part, cfg->partition_keep,
                     strcmp(outcome, "busy") == 0 ? "was in use (lock_timeout): next pass"
                                                  : outcome);
    }
    PQclear(res);
    if (dropped > 0)
        log_info("partitions: dropped %d fully published partitions older than %s", dropped,
                 cfg->partition_keep);
    return db_lost(conn) ? -1 : 0;
}
