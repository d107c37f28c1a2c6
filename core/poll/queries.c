#include "poll/queries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "db/db.h"
#include "db/schema.h"
#include "db/sql.h"
#include "event/outcome.h"

/* SQL text reads best as written. */
/* clang-format off */
/*
 * Rows any worker may take now: pending, due, and not leased. A worker's
 * lease is its transaction's row lock (FOR UPDATE SKIP LOCKED skips the rows
 * other workers hold); lease_until is only read, for rows leased by a relay
 * of an older version during a rolling upgrade. It states the
 * pending index's whole predicate, so the unordered claim uses it.
 */
#define LIVE(o) o ".{c.published_at} IS NULL AND " o ".{c.dead_at} IS NULL"
#define DUE(o)                                                                                \
    o ".{c.available_at} < 'infinity' AND " o ".{c.available_at} <= now() AND (" o            \
    ".{c.lease_until} IS NULL OR " o ".{c.lease_until} < now())"
#define CLAIMABLE(o) LIVE(o) " AND " DUE(o)

/*
 * The payload is not fetched when it is larger than max_payload_bytes ($2 in
 * both claims): a backlog of huge rows must not fill the relay's memory. The
 * size (@SIZE@, filled in per payload type) is read without the value where
 * PostgreSQL can tell: text, json and bytea know their raw length; jsonb is
 * measured as text only when even its stored (maybe compressed) form is not
 * clearly small, and is NULL (small) otherwise; by init-db's function, which
 * gives 1 GB when the text form does not fit in PostgreSQL's 1 GB (the cast
 * fails), so that no row can fail the claim.
 */
#define CLAIM_COLUMNS                                                                         \
    " t.{c.id} AS c_id, t.{c.event_id} AS c_event, t.{c.aggregate_type} AS c_type,"            \
    " t.{c.aggregate_id} AS c_agg, t.{c.event_type} AS c_etype,"                                \
    " CASE WHEN coalesce(@SIZE@, 0) > $2 THEN NULL ELSE t.{c.payload} END AS c_payload,"         \
    " t.{c.headers} AS c_headers, t.{c.destination} AS c_dest,"                                 \
    " (extract(epoch FROM t.{c.created_at}) * 1000000)::bigint AS c_created,"                   \
    " t.{c.aggregate_seq} AS c_seq, t.{c.event_version} AS c_version,"                           \
    " t.{c.attempts} AS c_attempts, @SIZE@ AS c_size, @TID@ AS c_tid"
/* The same columns, by name, once selected. */
#define CLAIMED                                                                               \
    " c_id, c_event, c_type, c_agg, c_etype, c_payload, c_headers, c_dest, c_created,"         \
    " c_seq, c_version,"                                                                        \
    " c_attempts, c_size, c_tid"

/*
 * A batch holds at most relay.max_batch_mb of rows (@BUDGET@ bytes), and
 * at least one: a backlog of large rows must not fill the relay's memory a
 * batch at a time. A row's bytes are its claimed size (@SIZE@) or, where
 * that is not read, its payload as stored: neither reads the value. Rows
 * locked past the budget are not returned; their locks end with the
 * claim's transaction.
 */
#define BYTES(o) "coalesce(" o ".c_size, pg_column_size(" o ".c_payload), 0)"
#define WITHIN_BUDGET(o) o ".c_before < @BUDGET@"

/*
 * A claim only locks: the lease is the worker's transaction, held while the
 * batch is in flight, so an event is written once, when it is recorded. A
 * relay that dies or stops answering loses its locks with its session
 * (idle_in_transaction_session_timeout = the lease, see session.c), and its
 * late record fails with the session: PostgreSQL is the fence.
 * $1 batch size, $2 max payload bytes, $3 the id to start after (NULL: from
 * the first; claimer.c says when).
 */
static const char claim_unordered[] =
    "WITH c AS (SELECT" CLAIM_COLUMNS ", NULL::text AS c_lt, NULL::text AS c_la,"
    " NULL::bigint AS c_n, NULL::boolean AS due FROM {table} t WHERE " CLAIMABLE("t")
    " AND t.{c.id} > coalesce($3::bigint, '-9223372036854775808')"
    " ORDER BY t.{c.id} LIMIT $1 FOR UPDATE SKIP LOCKED)"
    " SELECT" CLAIMED ", c_lt, c_la, c_n, due FROM (SELECT c.*,"
    " sum(" BYTES("c") ") OVER (ORDER BY c.c_id) - " BYTES("c") " AS c_before FROM c) c"
    " WHERE " WITHIN_BUDGET("c") " ORDER BY c_id";

#define AGG(o) o ".{c.aggregate_type}, " o ".{c.aggregate_id}"

/*
 * Per-aggregate order, fair across aggregates. Only the head of an
 * aggregate (its lowest pending id) and a run of the events right behind it
 * are claimable, so nothing of an aggregate overtakes its head. The schema's
 * insert trigger makes ids of one aggregate commit in order, so no lower id
 * can appear later.
 *
 * Heads are found by walking the distinct aggregates with pending events in
 * the live index (one index descent per aggregate, however many events wait
 * behind a head), starting after the aggregate where this worker's previous
 * claim stopped and wrapping around once: every aggregate whose head is due
 * is reached, whatever a hot, held, backing-off or dead aggregate holds. A
 * walk takes at most $6 heads (claimer.c sets it from what the runs held
 * last time), and each head's run gets an equal share of the batch (the
 * batch over the heads, rounded up). The rows past the batch are cut off
 * by batch.c, every head first (no sort here: a sort of whole rows cost
 * more than the cut).
 *
 * Heads are locked as the walk finds them, and only the runs behind heads
 * this claim holds are locked after them: rows behind a head another worker
 * holds are never touched, so they are not kept locked (and unclaimable)
 * for a whole batch.
 *
 * $1 batch size, $2 max payload bytes, $3/$4 the aggregate to start after
 * (NULL: from the first), $5 the longest run per aggregate (1 unless every
 * driver keeps order within an instance), $6 the most heads to take.
 * Returns the claimed rows, each with the last aggregate claimed in the walk
 * (where the next claim starts), the number of heads taken, and whether the
 * row is due: a run is cut at its first row that is not (batch.c drops it
 * and the rest of its run, whose locks end with the transaction).
 * Claimability is tested again where rows are locked, so a row another
 * worker recorded since this statement's snapshot is skipped.
 */
static const char claim_ordered[] =
    /* the live index is ordered (type, id, event id): the first entry after
     * an aggregate is the next aggregate's head. With no place to start
     * after ($3 NULL) the first branch finds nothing, and the walk starts at
     * the first aggregate as if it had wrapped: it ends at the last one. */
    "WITH RECURSIVE aggs(t, a, id, n, wrapped) AS ("
    " (SELECT f.t, f.a, f.id, 1, f.w FROM ("
    "  (SELECT " AGG("x") ", x.{c.id}, false FROM {table} x WHERE " LIVE("x")
    "   AND (" AGG("x") ") > ($3::text, $4::text) ORDER BY " AGG("x") ", x.{c.id} LIMIT 1)"
    "  UNION ALL"
    "  (SELECT " AGG("x") ", x.{c.id}, true FROM {table} x WHERE " LIVE("x")
    "   ORDER BY " AGG("x") ", x.{c.id} LIMIT 1)"
    "  LIMIT 1) f(t, a, id, w))"
    " UNION ALL"
    " SELECT nx.t, nx.a, nx.id, g.n + 1, nx.w FROM aggs g CROSS JOIN LATERAL ("
    "  (SELECT " AGG("x") ", x.{c.id}, g.wrapped FROM {table} x WHERE " LIVE("x")
    "   AND (" AGG("x") ") > (g.t, g.a) ORDER BY " AGG("x") ", x.{c.id} LIMIT 1)"
    "  UNION ALL"
    "  (SELECT " AGG("x") ", x.{c.id}, true FROM {table} x WHERE " LIVE("x") " AND NOT g.wrapped"
    "   ORDER BY " AGG("x") ", x.{c.id} LIMIT 1)"
    "  LIMIT 1) nx(t, a, id, w)"
    " WHERE NOT (nx.w AND coalesce((nx.t, nx.a) > ($3::text, $4::text), false))),"
    /* a head is locked here, in the walk, if it is due and free: one another
     * worker holds is passed over and does not count against the batch */
    " heads AS (SELECT g.t, g.a, g.n, g.id FROM aggs g WHERE true @DEAD_BEFORE@"
    "  AND EXISTS (SELECT 1 FROM {table} o WHERE o.{c.id} = g.id AND " CLAIMABLE("o")
    "   FOR UPDATE SKIP LOCKED) LIMIT $6),"
    /* the events right behind each head: a head and its run get the batch
     * over the heads, rounded up (a hot aggregate alone gets it all) */
    " share AS (SELECT least($5, ceil($1::numeric / greatest(count(*), 1)))::int AS k FROM heads),"
    /* a run is read, not locked: the head this claim locked keeps every
     * other claim off its aggregate (their walks skip the head, and runs
     * follow only heads a claim holds), and a row lock per event cost the
     * ordered claim a fifth of its time (mark_sql says how its rows are
     * found). */
    " runs AS (SELECT r.* FROM heads h CROSS JOIN LATERAL ("
    "  SELECT" CLAIM_COLUMNS ", " DUE("t") " AS due"
    "  FROM (SELECT @TID@ AS ctid, t.* FROM {table} t WHERE t.{c.aggregate_type} = h.t AND t.{c.aggregate_id} = h.a"
    "   AND " LIVE("t") " AND t.{c.id} > h.id ORDER BY t.{c.id} LIMIT (SELECT k - 1 FROM share)"
    "   ) t) r)"
    /* heads by the id array, not a join: the planner cannot estimate heads;
     * the walk ends at its last head (every head is in the batch). Shares
     * rounded up exceed the batch by less than a row per head: the limit
     * only guards that. The heads are read locked (they are this
     * transaction's already): a head updated since the statement's snapshot
     * is read as it is now, where the mark will find it. */
    /* the budget is spent in the walk's order (from the aggregate after
     * $3/$4, wrapping), each aggregate's rows by id: only ends of runs go */
    " SELECT" CLAIMED ", (SELECT h.t FROM heads h ORDER BY h.n DESC LIMIT 1),"
    " (SELECT h.a FROM heads h ORDER BY h.n DESC LIMIT 1), (SELECT count(*) FROM heads), c.due"
    " FROM (SELECT u.*, sum(" BYTES("u") ") OVER (ORDER BY coalesce((u.c_type, u.c_agg)"
    "  <= ($3::text, $4::text), false), u.c_type, u.c_agg, u.c_id) - " BYTES("u") " AS c_before"
    " FROM (SELECT * FROM (SELECT" CLAIM_COLUMNS ", true AS due FROM {table} t"
    "  WHERE t.{c.id} = ANY (ARRAY(SELECT id FROM heads)) FOR UPDATE OF t) hd"
    "  UNION ALL SELECT" CLAIMED ", r.due FROM runs r) u) c WHERE " WITHIN_BUDGET("c")
    " LIMIT 2 * $1";

/* on_dead = "block": a dead event holds back every later one of its aggregate. */
static const char no_dead_before[] =
    "AND NOT EXISTS (SELECT 1 FROM {table} d WHERE d.{c.aggregate_type} = g.t"
    " AND d.{c.aggregate_id} = g.a AND d.{c.dead_at} IS NOT NULL AND d.{c.published_at} IS NULL"
    " AND d.{c.id} < g.id)";

#define SIZE_JSONB                                                                            \
    "(CASE WHEN pg_column_size(t.{c.payload})::bigint * 256 < $2 THEN NULL"                    \
    " ELSE {schema}." SCHEMA_PAYLOAD_SIZE_FUNCTION "(t.{c.payload}) END)"
#define SIZE_JSON "octet_length(t.{c.payload}::text)"
#define SIZE_RAW "octet_length(t.{c.payload})"

/*
 * One statement records a whole batch. In the claim's transaction the rows
 * are the worker's own: its locks are the fence. After that transaction
 * ended without recording (the session was lost, or the statement failed on
 * its data), the rows are locked again first, and only those still pending
 * and free are recorded: a row another worker holds or recorded since is
 * left to it. Times are the record statement's, not now(): now() is the
 * claim's BEGIN, before the batch was published. $1 ids, $2 outcome codes (OUTCOME_*), $3 retry delays in ms,
 * $4 errors, $5 delete published rows, $6 lock again. Returns (outcome,
 * rows) for the rows actually recorded.
 */
#define O_PUBLISHED OUTCOME_SQL(OUTCOME_PUBLISHED)
#define O_RETRY OUTCOME_SQL(OUTCOME_RETRY)
#define O_DEAD OUTCOME_SQL(OUTCOME_DEAD)
#define O_RELEASE OUTCOME_SQL(OUTCOME_RELEASE)
#define O_DEFER OUTCOME_SQL(OUTCOME_DEFER)
#define MINE(ids, relock)                                                                     \
    "ANY (CASE WHEN " relock " THEN ARRAY(SELECT r.{c.id} FROM {table} r WHERE r.{c.id} = ANY(" \
    ids ") AND " LIVE("r") " FOR UPDATE SKIP LOCKED) ELSE " ids " END)"
static const char record_sql[] =
    "WITH f AS (SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::text[])"
    " AS f(id, outcome, delay_ms, error) WHERE f.id = " MINE("$1::bigint[]", "$6") "),"
    " gone AS (DELETE FROM {table} t USING f WHERE $5 AND f.outcome = " O_PUBLISHED
    " AND t.{c.id} = f.id RETURNING f.outcome),"
    /* released rows need no write: their lock ends with the transaction */
    " kept AS (UPDATE {table} t SET"
    " {c.published_at} = CASE WHEN f.outcome = " O_PUBLISHED " THEN statement_timestamp() ELSE t.{c.published_at} END,"
    " {c.dead_at} = CASE WHEN f.outcome = " O_DEAD " THEN statement_timestamp() ELSE t.{c.dead_at} END,"
    " {c.attempts} = t.{c.attempts} + CASE WHEN f.outcome = " O_DEFER " THEN 0 ELSE 1 END,"
    " {c.available_at} = CASE WHEN f.outcome IN (" O_RETRY ", " O_DEFER ")"
    "   THEN statement_timestamp() + f.delay_ms * interval '1 millisecond' ELSE t.{c.available_at} END,"
    " {c.last_error} = CASE WHEN f.outcome IN (" O_RETRY ", " O_DEAD ", " O_DEFER ")"
    "   THEN f.error ELSE t.{c.last_error} END"
    " FROM f WHERE t.{c.id} = f.id AND f.outcome <> " O_RELEASE
    " AND NOT (f.outcome = " O_PUBLISHED " AND $5) RETURNING f.outcome)"
    " SELECT outcome, count(*) FROM (SELECT outcome FROM gone UNION ALL SELECT outcome FROM kept"
    " UNION ALL SELECT outcome FROM f WHERE f.outcome = " O_RELEASE ") r GROUP BY outcome";

/* The common case, a batch all published, in the claim's transaction: no
 * per-row arrays to unpack. In a plain table the rows are found where the
 * claim read them (@AT@ is ctid = ANY ($1::tid[]): no index descent);
 * elsewhere by id. A run's rows are not locked (claim_ordered), so should
 * someone else have recorded one and its slot been reused meanwhile, a
 * ctid could name another row: the ids returned tell (record.c checks
 * them before the commit). $1 ctids or ids, $2 delete them. */
static const char mark_sql[] =
    "WITH gone AS (DELETE FROM {table} WHERE $2 AND @AT@ RETURNING {c.id}),"
    " kept AS (UPDATE {table} SET {c.published_at} = statement_timestamp(), {c.attempts} = {c.attempts} + 1"
    " WHERE NOT $2 AND @AT@ RETURNING {c.id}) @MARKED@";
/* What the mark returns: the ids after an ordered claim, else how many
 * (every row of an unordered claim is locked: its version cannot move). */
static const char marked_ids[] = "SELECT * FROM gone UNION ALL SELECT * FROM kept";
static const char marked_count[] =
    "SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept)";

/* Keeps the claim's transaction from being idle past the lease while a
 * batch waits for acknowledgements (renewing the lease). */
static const char renew_sql[] = "SELECT 1";

/* Is anything left to do? Under block, rows behind a dead event are not. */
static const char pending_sql[] =
    "SELECT EXISTS (SELECT 1 FROM {table} o WHERE o.{c.published_at} IS NULL"
    " AND o.{c.dead_at} IS NULL @BEHIND_DEAD@)";
static const char behind_dead[] =
    " AND NOT EXISTS (SELECT 1 FROM {table} p WHERE p.{c.aggregate_type} = o.{c.aggregate_type}"
    " AND p.{c.aggregate_id} = o.{c.aggregate_id} AND p.{c.id} < o.{c.id}"
    " AND p.{c.published_at} IS NULL AND p.{c.dead_at} IS NOT NULL)";
/* clang-format on */

/* Does a ctid name one row of the table? Only in a plain one: a
 * partitioned table repeats ctids across its partitions, a view has none. */
static int plain_table(PGconn *conn, const relay_config *cfg)
{
    const char *params[] = {cfg->schema, cfg->table};
    PGresult *res = PQexecParams(conn,
                                 "SELECT c.relkind = 'r' FROM pg_class c"
                                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
                                 " WHERE n.nspname = $1 AND c.relname = $2",
                                 2, NULL, params, NULL, NULL, 0);
    int plain = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
                PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return plain;
}

int queries_mark_returns_ids(const relay_config *cfg)
{
    return cfg->ordering == ORDERING_AGGREGATE; /* marked_ids, else marked_count */
}

static int prepare(PGconn *conn, const relay_config *cfg, const char *name, const char *tmpl,
                   const char *payload_type, int plain, char *err, size_t err_size)
{
    const char *size = strcmp(payload_type, "jsonb") == 0  ? SIZE_JSONB
                       : strcmp(payload_type, "json") == 0 ? SIZE_JSON
                                                           : SIZE_RAW;
    int block = cfg->on_dead == DEAD_BLOCK;
    char *text = text_fill(strdup(tmpl), "@SIZE@", size);
    text = text_fill(text, "@DEAD_BEFORE@", block ? no_dead_before : "");
    text = text_fill(text, "@BEHIND_DEAD@", block ? behind_dead : "");
    text = text_fill(text, "@MARKED@", queries_mark_returns_ids(cfg) ? marked_ids : marked_count);
    text = text_fill(text, "@TID@", plain ? "t.ctid" : "NULL::tid");
    char budget[32];
    snprintf(budget, sizeof budget, "%lld", (long long)cfg->max_batch_mb << 20);
    text = text_fill(text, "@BUDGET@", budget);
    text =
        text_fill(text, "@AT@", plain ? "ctid = ANY ($1::tid[])" : "{c.id} = ANY ($1::bigint[])");
    char *sql = sql_render(cfg, text);
    free(text);
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

int queries_prepare(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                    size_t err_size)
{
    const char *claim = cfg->ordering == ORDERING_AGGREGATE ? claim_ordered : claim_unordered;
    const char *const names[] = {"claim", "record", "mark", "renew", "pending"};
    const char *const texts[] = {claim, record_sql, mark_sql, renew_sql, pending_sql};
    int plain = plain_table(conn, cfg);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (prepare(conn, cfg, names[i], texts[i], payload_type, plain, err, err_size) < 0)
            return -1;
    return 0;
}
