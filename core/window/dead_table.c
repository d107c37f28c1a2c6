#include "window/dead_table.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "db/db.h"
#include "db/dead_letter.h"
#include "db/sql.h"
#include "event/outcome.h"

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



/* clang-format on */

int dead_table_insert(PGconn *conn, const relay_config *cfg, const event_row *row, unsigned attempts,
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

int dead_table_insert_raw(PGconn *conn, const relay_config *cfg, const event_row *row,
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



/* WAL mode's dead events are all in the dead-letter table. */
static long long requeue(PGconn *conn, const relay_config *cfg, int all, const char *ids_array,
                         long long *kept, char *err, size_t err_size)
{
    return dead_letter_requeue(conn, cfg, all, ids_array, 0, kept, err, err_size);
}

int dead_table_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count)
{
    return dead_letter_requeue_command(conn, cfg, all, ids, count, requeue);
}

const char dead_table_events_sql[] =
    "SELECT coalesce({c.event_id}::text,"
    " 'raw:' || dl_commit_lsn::text || ':' || md5(coalesce(dl_raw, ''))) AS dead_key,"
    " {c.event_id}::text AS event_id, {c.event_type}::text AS event_type,"
    " {c.aggregate_type}::text AS aggregate_type, {c.aggregate_id}::text AS aggregate_id,"
    " {c.payload} AS payload, {c.headers}::text AS headers,"
    " dl_at AS dead_at, (extract(epoch FROM dl_at) * 1000000)::bigint AS dead_at_us,"
    " dl_attempts AS attempts, dl_error AS error,"
    " (extract(epoch FROM {c.created_at}) * 1000000)::bigint AS created_at_us"
    " FROM {schema}.{n._dead_letter}";
