#include "wal_dead.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "dead_letter.h"
#include "outcome.h"
#include "sql.h"
#include "text.h"

/* SQL text reads best as written. */
/* clang-format off */
static const char insert_sql[] =
    "INSERT INTO {schema}.{n._dead_letter} ({c.event_id}, {c.aggregate_type}, {c.aggregate_id},"
    " {c.event_type}, {c.payload}, {c.headers}, {c.destination}, {c.created_at}, dl_attempts,"
    " dl_error, dl_at, dl_commit_lsn, {c.event_version})"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now(), $11, $12)"
    " ON CONFLICT ({c.event_id}) DO UPDATE SET dl_attempts = EXCLUDED.dl_attempts,"
    " dl_error = EXCLUDED.dl_error, dl_at = now(), dl_commit_lsn = EXCLUDED.dl_commit_lsn";

static const char insert_raw_sql[] =
    "INSERT INTO {schema}.{n._dead_letter} (dl_attempts, dl_error, dl_at, dl_commit_lsn, dl_raw)"
    " VALUES ($1, $2, now(), $3, $4)";

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

int wal_dead_insert(PGconn *conn, const relay_config *cfg, const wal_row *row, unsigned attempts,
                    const char *error, uint64_t commit_lsn, char *err, size_t err_size)
{
    char n[16], lsn[32];
    snprintf(n, sizeof n, "%u", attempts);
    snprintf(lsn, sizeof lsn, "%X/%X", (unsigned)(commit_lsn >> 32), (unsigned)commit_lsn);
    const char *params[12];
    for (int f = 0; f < WF_AGGREGATE_SEQ; f++)
        params[f] = row->v[f];
    params[8] = n;
    params[9] = error;
    params[10] = lsn;
    params[11] = row->v[WF_EVENT_VERSION];
    char *sql = sql_render(cfg, insert_sql);
    PGresult *res = PQexecParams(conn, sql, 12, NULL, params, NULL, NULL, 0);
    free(sql);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        /* 22: data exception (a bad uuid, jsonb, timestamp...); 23: a constraint */
        rc = state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0) ? -2 : -1;
        db_error(conn, res, err, err_size);
    }
    PQclear(res);
    return rc;
}

int wal_dead_insert_raw(PGconn *conn, const relay_config *cfg, const wal_row *row,
                        unsigned attempts, const char *error, const char *refusal,
                        uint64_t commit_lsn, char *err, size_t err_size)
{
    static const char *const names[WF_COUNT] = {
        "event_id",    "aggregate_type", "aggregate_id",  "event_type",    "payload",     "headers",
        "destination", "created_at",     "aggregate_seq", "event_version", "available_at"};
    json_t *raw = json_object();
    for (int f = 0; f < WF_COUNT; f++) {
        if (!row->v[f])
            continue;
        size_t cap = row->len[f] * 3 + 1; /* each invalid byte may become U+FFFD */
        char *clean = malloc(cap);
        json_object_set_new(raw, names[f], json_string(text_copy(clean, cap, row->v[f])));
        free(clean);
    }
    char *raw_text = json_dumps(raw, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(raw);
    char n[16], lsn[32], why[OUTCOME_ERROR_MAX];
    snprintf(n, sizeof n, "%u", attempts);
    snprintf(lsn, sizeof lsn, "%X/%X", (unsigned)(commit_lsn >> 32), (unsigned)commit_lsn);
    char refused[256];
    snprintf(why, sizeof why, "%s (its fields are in dl_raw: %s)", error,
             text_copy(refused, sizeof refused, refusal));
    const char *params[] = {n, why, lsn, raw_text};
    char *sql = sql_render(cfg, insert_raw_sql);
    PGresult *res = PQexecParams(conn, sql, 4, NULL, params, NULL, NULL, 0);
    free(sql);
    free(raw_text);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc < 0)
        db_error(conn, res, err, err_size);
    PQclear(res);
    return rc;
}

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

/* WAL mode's dead events are all in the dead-letter table. */
static long long requeue(PGconn *conn, const relay_config *cfg, int all, const char *ids_array,
                         long long *kept, char *err, size_t err_size)
{
    return dead_letter_requeue(conn, cfg, all, ids_array, 0, kept, err, err_size);
}

int wal_command_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count)
{
    return dead_letter_requeue_command(conn, cfg, all, ids, count, requeue);
}
