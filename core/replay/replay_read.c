#include "replay/replay_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/schema.h"
#include "db/sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
#define SELECTED                                                                                   \
    " FROM {table} o WHERE o.{c.id} > $1 AND o.{c.id} <= $2"                                      \
    " AND o.{c.created_at} >= $3::timestamptz AND o.{c.created_at} < $4::timestamptz"             \
    " AND ($5::text[] IS NULL OR (o.{c.aggregate_type}, o.{c.aggregate_id}) IN"                   \
    "   (SELECT * FROM unnest($5::text[], $6::text[])))"                                           \
    " AND "
static const char page_sql[] =
    "SELECT o.{c.id}, o.{c.event_id}, o.{c.aggregate_type}, o.{c.aggregate_id}, o.{c.event_type},"
    " o.{c.payload}, o.{c.headers}, o.{c.destination}, o.{c.aggregate_seq}, o.{c.event_version},"
    " (extract(epoch FROM o.{c.created_at}) * 1000000)::bigint" SELECTED;
static const char count_sql[] = "SELECT count(*)" SELECTED;
/* clang-format on */

/* The statement: the selection and the source's condition, then tail. */
static PGresult *run(PGconn *conn, const relay_config *cfg, const char *head,
                     const replay_filter *f, long long after, const char *tail, char *err,
                     size_t err_size)
{
    size_t len = strlen(head) + strlen(f->replayable) + strlen(tail) + 1;
    char *tmpl = malloc(len);
    snprintf(tmpl, len, "%s%s%s", head, f->replayable, tail);
    char from[24], to[24];
    snprintf(from, sizeof from, "%lld", after);
    snprintf(to, sizeof to, "%lld", f->max_id);
    const char *params[] = {from, to, f->since, f->until, f->types, f->ids};
    PGresult *res = sql_run(conn, cfg, tmpl, 6, params, PGRES_TUPLES_OK, NULL, err, err_size);
    free(tmpl);
    return res;
}

/* page_sql's columns after the id, as the row every reader feeds the window */
static const int page_fields[] = {WF_EVENT_ID,    WF_AGGREGATE_TYPE, WF_AGGREGATE_ID,
                                  WF_EVENT_TYPE,  WF_PAYLOAD,        WF_HEADERS,
                                  WF_DESTINATION, WF_AGGREGATE_SEQ,  WF_EVENT_VERSION};
#define PAGE_FIELDS (int)(sizeof page_fields / sizeof page_fields[0])

int replay_read_page(PGconn *conn, const relay_config *cfg, const replay_filter *f, long long after,
                     int limit, long long *ids, event_row **rows, char *err, size_t err_size)
{
    char tail[64];
    snprintf(tail, sizeof tail, " ORDER BY o.{c.id} LIMIT %d", limit);
    PGresult *res = run(conn, cfg, page_sql, f, after, tail, err, err_size);
    if (!res)
        return -1;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        const char *values[WF_COUNT] = {0};
        size_t lens[WF_COUNT] = {0};
        for (int k = 0; k < PAGE_FIELDS; k++)
            if (!PQgetisnull(res, i, k + 1)) {
                values[page_fields[k]] = PQgetvalue(res, i, k + 1);
                lens[page_fields[k]] = (size_t)PQgetlength(res, i, k + 1);
            }
        ids[i] = atoll(PQgetvalue(res, i, 0));
        rows[i] = event_row_new(values, lens);
        rows[i]->created_at_us = atoll(PQgetvalue(res, i, PAGE_FIELDS + 1));
    }
    PQclear(res);
    return n;
}

long long replay_count(PGconn *conn, const relay_config *cfg, const replay_filter *f,
                       long long after, char *err, size_t err_size)
{
    PGresult *res = run(conn, cfg, count_sql, f, after, "", err, err_size);
    long long n = res ? atoll(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    return n;
}

int replay_payload_kind(PGconn *conn, const relay_config *cfg, payload_kind *kind, char *err,
                        size_t err_size)
{
    char type[64];
    if (schema_payload_type(conn, cfg, type, sizeof type, err, err_size) < 0)
        return -1;
    *kind = payload_kind_of(type);
    return 0;
}
