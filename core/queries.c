#include "queries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "sql.h"

/* SQL text reads best as written. */
/* clang-format off */
/*
 * Rows any worker may take now: pending, due, lease free or expired. It
 * states the pending index's whole predicate (held rows, 'infinity', are not
 * in it); the head subquery below does not, so it cannot pick that index.
 */
#define CLAIMABLE(o)                                                                          \
    o ".{c.published_at} IS NULL AND " o ".{c.dead_at} IS NULL AND " o                          \
    ".{c.available_at} < 'infinity' AND " o ".{c.available_at} <= now() AND (" o                \
    ".{c.lease_until} IS NULL OR " o ".{c.lease_until} < now())"

#define CLAIM_RETURNING                                                                       \
    " RETURNING t.{c.id}, t.{c.event_id}, t.{c.aggregate_type}, t.{c.aggregate_id},"          \
    " t.{c.event_type}, t.{c.payload}, t.{c.headers}, t.{c.destination},"                      \
    " (extract(epoch FROM t.{c.created_at}) * 1000000)::bigint, t.{c.attempts}"

/* $1 owner, $2 batch size, $3 lease ms. The lease runs from when it is
 * written (clock_timestamp), not from the statement's start: a claim that
 * waited (a lock, a slow plan) must not write a lease already expired. */
static const char claim_unordered[] =
    "WITH picked AS (SELECT o.{c.id} FROM {table} o WHERE " CLAIMABLE("o")
    " ORDER BY o.{c.id} LIMIT $2 FOR UPDATE SKIP LOCKED)"
    " UPDATE {table} t SET {c.lease_owner} = $1,"
    " {c.lease_until} = clock_timestamp() + $3 * interval '1 millisecond'"
    " FROM picked WHERE t.{c.id} = picked.{c.id}" CLAIM_RETURNING;

/*
 * Per-aggregate order: only the head of an aggregate (no lower id of it is
 * still unpublished) is claimable, so at most one event per aggregate is in
 * flight anywhere. The schema's insert trigger makes ids of one aggregate
 * commit in order, so no lower id can appear later. The head test is a
 * correlated subquery, one index descent per row whatever the statistics
 * say (a fresh, unanalyzed outbox once got a whole-table anti-join). The
 * scan stops at the $4-th claimable row, so rows waiting behind heads in
 * flight cost little.
 */
static const char claim_ordered[] =
    "WITH picked AS (SELECT o.{c.id} FROM {table} o WHERE " CLAIMABLE("o")
    " AND o.{c.id} <= (SELECT max(w.{c.id}) FROM (SELECT x.{c.id} FROM {table} x WHERE "
    CLAIMABLE("x") " ORDER BY x.{c.id} LIMIT $4) w)"
    " AND o.{c.id} = (SELECT p.{c.id} FROM {table} p"
    " WHERE p.{c.aggregate_type} = o.{c.aggregate_type} AND p.{c.aggregate_id} = o.{c.aggregate_id}"
    " AND p.{c.published_at} IS NULL %s ORDER BY p.{c.id} LIMIT 1)"
    " ORDER BY o.{c.id} LIMIT $2 FOR UPDATE OF o SKIP LOCKED)"
    " UPDATE {table} t SET {c.lease_owner} = $1,"
    " {c.lease_until} = clock_timestamp() + $3 * interval '1 millisecond'"
    " FROM picked WHERE t.{c.id} = picked.{c.id}" CLAIM_RETURNING;

/*
 * One statement records a whole batch, fenced by the lease owner: a worker
 * whose lease was taken over changes nothing. $1 ids, $2 outcome codes,
 * $3 retry delays in ms, $4 errors, $5 owner, $6 delete published rows.
 * Returns (outcome, rows) for the rows actually recorded.
 */
static const char record_sql[] =
    "WITH f AS (SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::text[])"
    " AS f(id, outcome, delay_ms, error)),"
    " gone AS (DELETE FROM {table} t USING f WHERE $6 AND f.outcome = 0"
    " AND t.{c.id} = f.id AND t.{c.lease_owner} = $5 RETURNING f.outcome),"
    " kept AS (UPDATE {table} t SET"
    " {c.published_at} = CASE WHEN f.outcome = 0 THEN now() ELSE t.{c.published_at} END,"
    " {c.dead_at} = CASE WHEN f.outcome = 2 THEN now() ELSE t.{c.dead_at} END,"
    " {c.attempts} = t.{c.attempts} + CASE WHEN f.outcome IN (3, 4) THEN 0 ELSE 1 END,"
    " {c.available_at} = CASE WHEN f.outcome IN (1, 4)"
    "   THEN now() + f.delay_ms * interval '1 millisecond' ELSE t.{c.available_at} END,"
    " {c.last_error} = CASE WHEN f.outcome IN (1, 2, 4) THEN f.error ELSE t.{c.last_error} END,"
    " {c.lease_owner} = NULL, {c.lease_until} = NULL"
    " FROM f WHERE t.{c.id} = f.id AND t.{c.lease_owner} = $5"
    " AND NOT (f.outcome = 0 AND $6) RETURNING f.outcome)"
    " SELECT outcome, count(*) FROM (SELECT outcome FROM gone UNION ALL SELECT outcome FROM kept) r"
    " GROUP BY outcome";

/* The common case, a batch all published: no per-row arrays to unpack.
 * $1 ids, $2 owner, $3 delete them. Returns the rows recorded. */
static const char mark_sql[] =
    "WITH gone AS (DELETE FROM {table} WHERE $3 AND {c.id} = ANY($1::bigint[])"
    " AND {c.lease_owner} = $2 RETURNING 1),"
    " kept AS (UPDATE {table} SET {c.published_at} = now(), {c.attempts} = {c.attempts} + 1,"
    " {c.lease_owner} = NULL, {c.lease_until} = NULL"
    " WHERE NOT $3 AND {c.id} = ANY($1::bigint[]) AND {c.lease_owner} = $2 RETURNING 1)"
    " SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept)";

/* $1 ids still in flight, $2 owner, $3 lease ms. */
static const char renew_sql[] =
    "UPDATE {table} SET {c.lease_until} = clock_timestamp() + $3 * interval '1 millisecond'"
    " WHERE {c.id} = ANY($1::bigint[]) AND {c.lease_owner} = $2";

/*
 * Keeps the rest of an aggregate out of the claim window while its head
 * waits: later events inherit the head's available_at ('infinity' for a
 * head dead under on_dead = block). $1 head ids.
 */
static const char hold_sql[] =
    "UPDATE {table} s SET {c.available_at} = CASE WHEN h.{c.dead_at} IS NOT NULL"
    " THEN 'infinity' ELSE h.{c.available_at} END"
    " FROM {table} h WHERE h.{c.id} = ANY($1::bigint[])"
    " AND s.{c.aggregate_type} = h.{c.aggregate_type} AND s.{c.aggregate_id} = h.{c.aggregate_id}"
    " AND s.{c.id} > h.{c.id} AND s.{c.published_at} IS NULL AND s.{c.dead_at} IS NULL";

/* Is anything left to do? Under block, rows behind a dead head are not. */
static const char pending_sql[] =
    "SELECT EXISTS (SELECT 1 FROM {table} o WHERE o.{c.published_at} IS NULL"
    " AND o.{c.dead_at} IS NULL %s)";
static const char behind_dead[] =
    " AND NOT EXISTS (SELECT 1 FROM {table} p WHERE p.{c.aggregate_type} = o.{c.aggregate_type}"
    " AND p.{c.aggregate_id} = o.{c.aggregate_id} AND p.{c.id} < o.{c.id}"
    " AND p.{c.published_at} IS NULL AND p.{c.dead_at} IS NOT NULL)";
/* clang-format on */

static int prepare(PGconn *conn, const relay_config *cfg, const char *name, const char *tmpl,
                   char *err, size_t err_size)
{
    char *sql = sql_render(cfg, tmpl);
    PGresult *res = PQprepare(conn, name, sql, 0, NULL);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) {
        char why[512];
        db_error(conn, res, why, sizeof why);
        snprintf(err, err_size, "preparing %s: %s", name, why);
    }
    PQclear(res);
    free(sql);
    return ok ? 0 : -1;
}

int queries_prepare(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char claim[sizeof claim_ordered + 64], pending[sizeof pending_sql + sizeof behind_dead];
    const char *skip_dead = cfg->on_dead == DEAD_SKIP ? "AND p.{c.dead_at} IS NULL" : "";
    snprintf(claim, sizeof claim, claim_ordered, skip_dead);
    snprintf(pending, sizeof pending, pending_sql, cfg->on_dead == DEAD_BLOCK ? behind_dead : "");
    const char *claim_sql = cfg->ordering == ORDERING_AGGREGATE ? claim : claim_unordered;
    if (prepare(conn, cfg, "claim", claim_sql, err, err_size) < 0 ||
        prepare(conn, cfg, "record", record_sql, err, err_size) < 0 ||
        prepare(conn, cfg, "mark", mark_sql, err, err_size) < 0 ||
        prepare(conn, cfg, "renew", renew_sql, err, err_size) < 0 ||
        prepare(conn, cfg, "hold", hold_sql, err, err_size) < 0 ||
        prepare(conn, cfg, "pending", pending, err, err_size) < 0)
        return -1;
    return 0;
}

int queries_payload_type(PGconn *conn, const relay_config *cfg, char *out, size_t out_size,
                         char *err, size_t err_size)
{
    const char *params[] = {cfg->schema, cfg->table, cfg->col.payload};
    PGresult *res = PQexecParams(conn,
                                 "SELECT format_type(a.atttypid, NULL) FROM pg_attribute a"
                                 " JOIN pg_class c ON c.oid = a.attrelid"
                                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
                                 " WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = $3"
                                 " AND NOT a.attisdropped",
                                 3, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        db_error(conn, res, err, err_size);
    else if (PQntuples(res) == 0)
        snprintf(err, err_size, "table %s.%s has no payload column \"%s\"", cfg->schema, cfg->table,
                 cfg->col.payload);
    else {
        snprintf(out, out_size, "%s", PQgetvalue(res, 0, 0));
        rc = 0;
    }
    PQclear(res);
    return rc;
}
