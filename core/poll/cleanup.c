#include "poll/cleanup.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "db/db.h"
#include "db/partitions.h"
#include "db/sql.h"
#include "poll/partition_upkeep.h"
#include "telemetry/counters.h"

/* A partitioned outbox is kept a whole partition at a time
 * (partition_upkeep.c): no row is deleted one by one. Otherwise: small
 * batches that skip locked rows, so cleanup never holds locks a claim would
 * wait on. */
#define CLEANUP_BATCH 1000
#define CLEANUP_BATCH_SQL "1000"

void *cleanup_main(void *arg)
{
    relay_state *st = arg;
    const relay_config *cfg = st->cfg;
    char hours[16];
    snprintf(hours, sizeof hours, "%d", cfg->retention_hours);
    char *sql = sql_render(cfg, "DELETE FROM {table} WHERE {c.id} IN (SELECT {c.id} FROM {table}"
                                " WHERE {c.published_at} < now() - $1 * interval '1 hour'"
                                " LIMIT " CLEANUP_BATCH_SQL " FOR UPDATE SKIP LOCKED)");
    PGconn *conn = NULL;
    long long next = now_ms() + 5000;
    counters_thread_register(st->metrics, cfg->workers + BEAT_CLEANUP);
    while (!atomic_load(&st->stop)) {
        usleep(100000);
        counters_beat();
        if (now_ms() < next)
            continue;
        next = now_ms() + 60000;
        char err[512];
        if (!conn && !(conn = db_connect(cfg, "outbox-relay cleanup", err, sizeof err))) {
            log_warn("cleanup: %s", err);
            continue;
        }
        if (partitions_on(cfg)) {
            if (partition_upkeep(conn, cfg, &st->squats, err, sizeof err) < 0) {
                log_warn("cleanup: %s", err);
                PQfinish(conn);
                conn = NULL;
            }
            continue;
        }
        long long total = 0;
        for (int deleted = CLEANUP_BATCH; deleted >= CLEANUP_BATCH && !atomic_load(&st->stop);) {
            const char *params[] = {hours};
            PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                db_error(conn, res, err, sizeof err);
                log_warn("cleanup: %s", err);
                PQclear(res);
                PQfinish(conn);
                conn = NULL;
                break;
            }
            deleted = atoi(PQcmdTuples(res));
            counters_beat();
            total += deleted;
            PQclear(res);
        }
        if (total > 0)
            log_info("cleanup: deleted %lld published rows older than %d hours", total,
                     cfg->retention_hours);
    }
    PQfinish(conn);
    free(sql);
    return NULL;
}
