/* `status` in poll mode: the outbox table's totals and the aggregates
 * held back. */
#include "poll/poll_admin.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "db/db.h"
#include "db/dead_letter.h"
#include "db/partitions.h"
#include "db/sql.h"
#include "poll/poll_outputs.h"

/* SQL text reads best as written. */
/* clang-format off */
#define TOTALS_COLUMNS                                                                            \
    "SELECT count(*) FILTER (WHERE {c.dead_at} IS NULL AND NOT " SQL_HELD("") "),"                \
    " count(*) FILTER (WHERE {c.dead_at} IS NULL AND " SQL_HELD("") "),"                          \
    " count(*) FILTER (WHERE {c.dead_at} IS NOT NULL),"                                           \
    " coalesce(extract(epoch FROM now() - min({c.created_at}) FILTER (WHERE {c.dead_at} IS NULL)), 0)," \
    /* last put back, no attempt counted, because their output was unavailable */                 \
    " count(*) FILTER (WHERE {c.dead_at} IS NULL"                                                  \
    "   AND ({c.last_error} LIKE 'unavailable:%' OR {c.last_error} LIKE 'not sent:%')),"
#define TOTALS_FROM " FROM {table} WHERE {c.published_at} IS NULL"
static const char totals_sql[] = TOTALS_COLUMNS " 0" TOTALS_FROM;
/* a partitioned outbox's retired partitions left their dead rows there */
static const char totals_partitioned_sql[] =
    TOTALS_COLUMNS " (SELECT count(*) FROM {schema}.{n._dead_letter})" TOTALS_FROM;

/*
 * The aggregates held back: those whose head (oldest pending event) waits
 * for a retry, and under on_dead = block ($1) those whose oldest event is
 * dead with live events behind it (listed first: only an operator frees
 * them). The first STATUS_HELD_MAX_SQL, oldest first, each with the total.
 */
#define TS(x) "to_char(" x " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
static const char held_sql[] =
    "WITH agg AS (SELECT min({c.id}) FILTER (WHERE {c.dead_at} IS NULL) AS live_head,"
    "  min({c.id}) FILTER (WHERE {c.dead_at} IS NOT NULL) AS dead_first,"
    "  count(*) FILTER (WHERE {c.dead_at} IS NULL) AS live"
    "  FROM {table} WHERE {c.published_at} IS NULL"
    "  GROUP BY {c.aggregate_type}, {c.aggregate_id}),"
    " held AS (SELECT CASE WHEN $1::bool AND dead_first < live_head THEN dead_first"
    "  ELSE live_head END AS head, live FROM agg WHERE live_head IS NOT NULL)"
    " SELECT o.{c.id}, o.{c.event_id}, o.{c.aggregate_type}, o.{c.aggregate_id}, o.{c.attempts},"
    "  coalesce(o.{c.last_error}, ''), o.{c.dead_at} IS NOT NULL,"
    "  " TS("coalesce(o.{c.dead_at}, o.{c.created_at})") ","
    "  CASE WHEN o.{c.dead_at} IS NOT NULL THEN '' WHEN o.{c.available_at} = 'infinity'"
    "   THEN 'never (held)' ELSE " TS("o.{c.available_at}") " END,"
    "  h.live - (o.{c.dead_at} IS NULL)::int, count(*) OVER ()"
    " FROM held h JOIN {table} o ON o.{c.id} = h.head"
    " WHERE o.{c.dead_at} IS NOT NULL OR o.{c.available_at} > now()"
    " ORDER BY o.{c.dead_at} IS NULL, coalesce(o.{c.dead_at}, o.{c.created_at}), o.{c.id}"
    " LIMIT " STATUS_HELD_MAX_SQL;
/* clang-format on */

enum {
    H_ID,
    H_EVENT,
    H_TYPE,
    H_AGG,
    H_ATTEMPTS,
    H_ERROR,
    H_DEAD,
    H_SINCE,
    H_NEXT,
    H_BEHIND,
    H_ALL
};

static void print_held_text(PGresult *h)
{
    int rows = PQntuples(h);
    long long all = rows ? atoll(PQgetvalue(h, 0, H_ALL)) : 0;
    printf("held back:              %lld aggregates%s\n", all,
           all > rows ? " (the oldest " STATUS_HELD_MAX_SQL " below)" : "");
    for (int r = 0; r < rows; r++) {
        int dead = PQgetvalue(h, r, H_DEAD)[0] == 't';
        fputs("  ", stdout);
        text_print_clean(stdout, PQgetvalue(h, r, H_TYPE), 64);
        putchar('/');
        text_print_clean(stdout, PQgetvalue(h, r, H_AGG), 64);
        printf("  head id %s (event %s), attempts %s, %s since %s", PQgetvalue(h, r, H_ID),
               PQgetvalue(h, r, H_EVENT), PQgetvalue(h, r, H_ATTEMPTS),
               dead ? "dead (on_dead = block)" : "pending", PQgetvalue(h, r, H_SINCE));
        if (!dead)
            printf(", next attempt %s", PQgetvalue(h, r, H_NEXT));
        printf(", %s behind it\n    last error: ", PQgetvalue(h, r, H_BEHIND));
        text_print_clean(stdout, PQgetvalue(h, r, H_ERROR), 200);
        putchar('\n');
    }
}

static json_t *held_heads_json(PGresult *h)
{
    int rows = PQntuples(h);
    json_t *list = json_array();
    for (int r = 0; r < rows; r++) {
        int dead = PQgetvalue(h, r, H_DEAD)[0] == 't';
        json_array_append_new(list, json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:b,s:s,s:s?,s:I}", "id",
                                              (json_int_t)atoll(PQgetvalue(h, r, H_ID)), "event_id",
                                              PQgetvalue(h, r, H_EVENT), "aggregate_type",
                                              PQgetvalue(h, r, H_TYPE), "aggregate_id",
                                              PQgetvalue(h, r, H_AGG), "attempts",
                                              (json_int_t)atoll(PQgetvalue(h, r, H_ATTEMPTS)),
                                              "last_error", PQgetvalue(h, r, H_ERROR), "dead", dead,
                                              "since", PQgetvalue(h, r, H_SINCE), "next_attempt",
                                              dead ? NULL : PQgetvalue(h, r, H_NEXT), "behind",
                                              (json_int_t)atoll(PQgetvalue(h, r, H_BEHIND))));
    }
    return list;
}

static int print_status(PGconn *conn, const relay_config *cfg, PGresult *t, PGresult *h,
                        json_t *json)
{
    long long pending = atoll(PQgetvalue(t, 0, 0)), in_flight = atoll(PQgetvalue(t, 0, 1)),
              dead = atoll(PQgetvalue(t, 0, 2)) + atoll(PQgetvalue(t, 0, 5)),
              waiting = atoll(PQgetvalue(t, 0, 4));
    /* created_at is the inserting clock's (clock_timestamp()): a row
     * written after this statement's now() reads as a little negative */
    double oldest = pending ? fmax(atof(PQgetvalue(t, 0, 3)), 0) : 0;
    if (json) { /* flat, the first keys as before: scripts read them */
        json_int_t held = PQntuples(h) ? (json_int_t)atoll(PQgetvalue(h, 0, H_ALL)) : 0;
        json_object_update_new(json,
                               json_pack("{s:I,s:I,s:I,s:f,s:I,s:I,s:o}", "pending",
                                         (json_int_t)pending, "in_flight", (json_int_t)in_flight,
                                         "dead", (json_int_t)dead, "oldest_pending_seconds", oldest,
                                         "waiting_for_output", (json_int_t)waiting, "held_back",
                                         held, "held_back_heads", held_heads_json(h)));
        return poll_outputs_status(conn, cfg, json);
    }
    printf("pending:                %lld\nin flight:              %lld\n"
           "dead:                   %lld\noldest pending age (s): %.3f\n"
           "waiting for an output:  %lld%s\n",
           pending, in_flight, dead, oldest, waiting,
           waiting ? " (its broker was unreachable; no attempt counted)" : "");
    print_held_text(h);
    return poll_outputs_status(conn, cfg, NULL);
}

static PGresult *query(PGconn *conn, const relay_config *cfg, const char *tmpl, int nparams,
                       const char *const *params)
{
    char *sql = sql_render(cfg, tmpl);
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        return res;
    char err[1024];
    db_error(conn, res, err, sizeof err);
    fprintf(stderr, "outbox-relay: status: %s\n", err);
    PQclear(res);
    return NULL;
}

int poll_command_status(PGconn *conn, const relay_config *cfg, json_t *json)
{
    const char *params[] = {cfg->on_dead == DEAD_BLOCK ? "true" : "false"};
    PGresult *t =
        query(conn, cfg, partitions_on(cfg) ? totals_partitioned_sql : totals_sql, 0, NULL);
    PGresult *h = t ? query(conn, cfg, held_sql, 1, params) : NULL;
    int rc = t && h ? print_status(conn, cfg, t, h, json) : -1;
    PQclear(t);
    PQclear(h);
    return rc < 0 ? 1 : 0;
}

/* clang-format off */
/* Dead rows back to pending (under on_dead = block, that releases the events
 * behind them: the claim finds no dead event ahead of them any more). */
static const char requeue_sql[] =
    "WITH r AS (UPDATE {table} SET {c.dead_at} = NULL, {c.attempts} = 0, {c.available_at} = now(),"
    " {c.lease_owner} = NULL, {c.lease_until} = NULL"
    " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL"
    " AND ($1 OR {c.event_id} = ANY($2::uuid[])) RETURNING 1)"
    " SELECT count(*) FROM r";
/* clang-format on */

/* The dead rows in place, and those a partition's retirement moved to the
 * dead-letter table, in one transaction. */
static long long requeue(PGconn *conn, const relay_config *cfg, int all, const char *ids_array,
                         long long *kept, char *err, size_t err_size)
{
    char *sql = sql_render(cfg, requeue_sql);
    const char *params[] = {all ? "true" : "false", ids_array};
    PGresult *res = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);
    free(sql);
    long long n = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        n = atoll(PQgetvalue(res, 0, 0));
    else
        db_error(conn, res, err, err_size);
    PQclear(res);
    if (n < 0 || !partitions_on(cfg))
        return n;
    long long moved = dead_letter_requeue(conn, cfg, all, ids_array, 1, kept, err, err_size);
    return moved < 0 ? -1 : n + moved;
}

int poll_command_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count)
{
    return dead_letter_requeue_command(conn, cfg, all, ids, count, requeue);
}
