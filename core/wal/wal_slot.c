#include "wal/wal_slot.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "db/db.h"
#include "db/sql.h"
#include "wal/wal_metrics.h"
#include "window/window_side.h"

#define SCOPE "wal"

/* SQL text reads best as written. */
/* clang-format off */
static const char lag_sql[] =
    "SELECT coalesce(pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
    " ELSE pg_current_wal_lsn() END, confirmed_flush_lsn), 0)::bigint, coalesce(wal_status, ''),"
    " coalesce(active_pid, 0), coalesce((SELECT extract(epoch FROM r.flush_lag)"
    "   FROM pg_stat_replication r WHERE r.pid = s.active_pid), 0)"
    " FROM pg_replication_slots s WHERE slot_name = $1";

static const char dead_sql[] =
    "SELECT count(*), coalesce(extract(epoch FROM now() - min(dl_at)), 0)"
    " FROM {schema}.{n._dead_letter}";
/* clang-format on */

int wal_slot_lag(PGconn *conn, const relay_config *cfg, long long *bytes, int *lost, char *err,
                 size_t err_size)
{
    const char *params[] = {cfg->wal_slot};
    PGresult *res = PQexecParams(conn, lag_sql, 1, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        db_error(conn, res, err, err_size);
    } else if (PQntuples(res) == 0) {
        snprintf(err, err_size, "replication slot \"%s\" does not exist", cfg->wal_slot);
        rc = 1;
    } else {
        *bytes = atoll(PQgetvalue(res, 0, 0));
        *lost = strcmp(PQgetvalue(res, 0, 1), "lost") == 0;
        rc = 0;
    }
    PQclear(res);
    return rc;
}

/* The slot's lag into relay_state, a warning past lag_warn_mb; an
 * invalidated slot sets slot_lost. */
void wal_slot_upkeep(void *arg, relay_state *st, PGconn **db)
{
    wal_slot_watch *wt = arg;
    const relay_config *cfg = st->cfg;
    long long bytes = 0;
    int lost = 0;
    char err[512] = "";
    if (!window_side_session(db, cfg, err, sizeof err) ||
        wal_slot_lag(*db, cfg, &bytes, &lost, err, sizeof err) != 0) {
        log_scoped(OBX_LOG_DEBUG, SCOPE, "slot check: %s",
                   err); /* the stream says when it is gone */
        return;
    }
    if (lost) {
        if (!atomic_exchange(&wt->lost, 1))
            log_error("replication slot %s was invalidated (the server removed WAL it still "
                      "needed: max_slot_wal_keep_size); run `outbox-relay init-db --reset-slot -c "
                      "%s` (see docs/sources.md, Slot safety)",
                      cfg->wal_slot, cfg->path);
        return;
    }
    atomic_store(&((wal_gauges *)st->gauges)->lag_bytes, bytes);
    atomic_store(&((wal_gauges *)st->gauges)->lag_known, 1);
    long long limit = (long long)cfg->wal_lag_warn_mb * 1024 * 1024;
    if (bytes > limit && !wt->lag_warned)
        log_warn("replication slot %s holds %lld MB of WAL (over relay.wal.lag_warn_mb = %d); "
                 "the server keeps it until the relay confirms",
                 cfg->wal_slot, bytes >> 20, cfg->wal_lag_warn_mb);
    else if (bytes <= limit && wt->lag_warned)
        log_info("replication slot %s is back under relay.wal.lag_warn_mb", cfg->wal_slot);
    wt->lag_warned = bytes > limit;
}

int wal_command_status(PGconn *conn, const relay_config *cfg, json_t *json)
{
    const char *params[] = {cfg->wal_slot};
    PGresult *slot = PQexecParams(conn, lag_sql, 1, NULL, params, NULL, NULL, 0);
    char *sql = sql_render(cfg, dead_sql);
    PGresult *dead = PQexec(conn, sql);
    free(sql);
    int rc = 1;
    char err[1024];
    if (PQresultStatus(slot) != PGRES_TUPLES_OK || PQresultStatus(dead) != PGRES_TUPLES_OK) {
        db_error(conn, PQresultStatus(slot) != PGRES_TUPLES_OK ? slot : dead, err, sizeof err);
        fprintf(stderr, "outbox-relay: status: %s\n", err);
    } else if (PQntuples(slot) == 0) {
        fprintf(stderr,
                "outbox-relay: status: replication slot \"%s\" does not exist: run "
                "`outbox-relay init-db -c %s`\n",
                cfg->wal_slot, cfg->path);
    } else {
        long long lag = atoll(PQgetvalue(slot, 0, 0)), dead_n = atoll(PQgetvalue(dead, 0, 0));
        const char *wal_status = PQgetvalue(slot, 0, 1);
        int pid = atoi(PQgetvalue(slot, 0, 2));
        double lag_s = atof(PQgetvalue(slot, 0, 3)), oldest = atof(PQgetvalue(dead, 0, 1));
        if (json) {
            json_object_update_new(json, json_pack("{s:s,s:s,s:I,s:f,s:s,s:b,s:I,s:f}", "source",
                                                   "wal", "slot", cfg->wal_slot, "slot_lag_bytes",
                                                   (json_int_t)lag, "slot_lag_seconds", lag_s,
                                                   "slot_wal_status", wal_status, "slot_active",
                                                   pid != 0, "dead", (json_int_t)dead_n,
                                                   "oldest_dead_seconds", oldest));
        } else {
            printf("source:                 wal (slot %s, %s)\n"
                   "slot lag (bytes):       %lld\nslot lag (s):           %.3f\n"
                   "slot WAL status:        %s\ndead:                   %lld\n",
                   cfg->wal_slot, pid ? "streaming" : "no relay attached", lag, lag_s,
                   wal_status[0] ? wal_status : "unknown", dead_n);
            if (strcmp(wal_status, "lost") == 0)
                printf("the slot was invalidated: run `outbox-relay init-db --reset-slot -c %s` "
                       "(events committed while it was invalid are not relayed)\n",
                       cfg->path);
        }
        rc = 0;
    }
    PQclear(slot);
    PQclear(dead);
    return rc;
}
