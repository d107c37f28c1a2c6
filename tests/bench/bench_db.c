/*
 * bench_db: the database limit. W threads, one connection each, run the
 * relay's own claim statement (copied from core/queries.c, default table and
 * column names) and then mark the claimed rows in one batched statement, with
 * no broker in between, until nothing is left to claim.
 *
 *   bench_db -d DSN [-w WORKERS] [-b BATCH] [-o none|aggregate] [-r mark|delete]
 *            [-m simple|relay]
 *
 * -m simple marks with a plain fenced `UPDATE ... WHERE id = ANY($1)` (the
 * database limit the relay is compared with); -m relay runs the relay's own
 * record statement (unnest of ids/outcomes/delays/errors), to show what that
 * statement's shape costs on top.
 *
 * Prints one line: "events seconds events_per_second", timed from the first
 * claim to the end of the last mark.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#define CLAIMABLE(o)                                                                               \
    o ".published_at IS NULL AND " o ".dead_at IS NULL AND " o ".available_at < 'infinity' AND "   \
    o ".available_at <= now() AND (" o ".lease_until IS NULL OR " o ".lease_until < now())"

#define CLAIM_RETURNING                                                                            \
    " RETURNING t.id, t.event_id, t.aggregate_type, t.aggregate_id, t.event_type, t.payload,"      \
    " t.headers, t.destination, (extract(epoch FROM t.created_at) * 1000000)::bigint, t.attempts"

/* core/queries.c claim statements, verbatim but for the names */
static const char claim_unordered[] =
    "WITH picked AS (SELECT o.id FROM \"public\".\"outbox\" o WHERE " CLAIMABLE("o")
    " ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED)"
    " UPDATE \"public\".\"outbox\" t SET lease_owner = $1,"
    " lease_until = clock_timestamp() + $3 * interval '1 millisecond'"
    " FROM picked WHERE t.id = picked.id" CLAIM_RETURNING;

static const char claim_ordered[] =
    "WITH picked AS (SELECT o.id FROM \"public\".\"outbox\" o WHERE " CLAIMABLE("o")
    " AND o.id <= (SELECT max(w.id) FROM (SELECT x.id FROM \"public\".\"outbox\" x WHERE "
    CLAIMABLE("x") " ORDER BY x.id LIMIT $4) w)"
    " AND o.id = (SELECT p.id FROM \"public\".\"outbox\" p"
    " WHERE p.aggregate_type = o.aggregate_type AND p.aggregate_id = o.aggregate_id"
    " AND p.published_at IS NULL AND p.dead_at IS NULL ORDER BY p.id LIMIT 1)"
    " ORDER BY o.id LIMIT $2 FOR UPDATE OF o SKIP LOCKED)"
    " UPDATE \"public\".\"outbox\" t SET lease_owner = $1,"
    " lease_until = clock_timestamp() + $3 * interval '1 millisecond'"
    " FROM picked WHERE t.id = picked.id" CLAIM_RETURNING;
/* clang-format on */

static const char mark_simple[] =
    "UPDATE \"public\".\"outbox\" SET published_at = now(), attempts = attempts + 1,"
    " lease_owner = NULL, lease_until = NULL WHERE id = ANY($1::bigint[]) AND lease_owner = $2";
static const char delete_simple[] =
    "DELETE FROM \"public\".\"outbox\" WHERE id = ANY($1::bigint[]) AND lease_owner = $2";

/* core/queries.c record_sql, verbatim but for the names */
static const char record_relay[] =
    "WITH f AS (SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::text[])"
    " AS f(id, outcome, delay_ms, error)),"
    " gone AS (DELETE FROM \"public\".\"outbox\" t USING f WHERE $6 AND f.outcome = 0"
    " AND t.id = f.id AND t.lease_owner = $5 RETURNING f.outcome),"
    " kept AS (UPDATE \"public\".\"outbox\" t SET"
    " published_at = CASE WHEN f.outcome = 0 THEN now() ELSE t.published_at END,"
    " dead_at = CASE WHEN f.outcome = 2 THEN now() ELSE t.dead_at END,"
    " attempts = t.attempts + CASE WHEN f.outcome IN (3, 4) THEN 0 ELSE 1 END,"
    " available_at = CASE WHEN f.outcome IN (1, 4)"
    "   THEN now() + f.delay_ms * interval '1 millisecond' ELSE t.available_at END,"
    " last_error = CASE WHEN f.outcome IN (1, 2, 4) THEN f.error ELSE t.last_error END,"
    " lease_owner = NULL, lease_until = NULL"
    " FROM f WHERE t.id = f.id AND t.lease_owner = $5"
    " AND NOT (f.outcome = 0 AND $6) RETURNING f.outcome)"
    " SELECT outcome, count(*) FROM (SELECT outcome FROM gone UNION ALL SELECT outcome FROM kept) r"
    " GROUP BY outcome";

static const char *dsn;
static int workers = 1, batch = 500, ordered, delete_mode, relay_record;
static atomic_llong total;
static atomic_int failed;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static PGresult *must(PGconn *c, PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) != want) {
        fprintf(stderr, "bench_db: %s: %s", what, PQerrorMessage(c));
        atomic_store(&failed, 1);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* "{1,2,3}" (and, for the relay statement, the parallel outcome arrays) */
typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *s, const char *t, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->buf = realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, t, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void repeat_array(sbuf *s, const char *elem, int n)
{
    s->len = 0;
    sb_put(s, "{", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            sb_put(s, ",", 1);
        sb_put(s, elem, strlen(elem));
    }
    sb_put(s, "}", 1);
}

static void *worker(void *arg)
{
    int index = (int)(long)arg;
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_db: connect: %s", PQerrorMessage(c));
        atomic_store(&failed, 1);
        PQfinish(c);
        return NULL;
    }
    /* the relay's own session setting (core/db.c): custom plans see the LIMIT */
    PQclear(PQexec(c, "SET plan_cache_mode = force_custom_plan"));
    const char *mark = relay_record ? record_relay : delete_mode ? delete_simple : mark_simple;
    PGresult *r;
    if (!(r = must(c, PQprepare(c, "claim", ordered ? claim_ordered : claim_unordered, 0, NULL),
                   PGRES_COMMAND_OK, "prepare claim")))
        goto out;
    PQclear(r);
    if (!(r = must(c, PQprepare(c, "mark", mark, 0, NULL), PGRES_COMMAND_OK, "prepare mark")))
        goto out;
    PQclear(r);

    char owner[64], b[16], window[16];
    snprintf(owner, sizeof owner, "bench-db:%d:w%d", (int)getpid(), index);
    snprintf(b, sizeof b, "%d", batch);
    snprintf(window, sizeof window, "%d", batch * 8);
    const char *cp[] = {owner, b, "30000", window};
    sbuf ids = {0}, outcomes = {0}, delays = {0}, errors = {0};
    for (;;) {
        PGresult *claim = must(c, PQexecPrepared(c, "claim", ordered ? 4 : 3, cp, NULL, NULL, 0),
                               PGRES_TUPLES_OK, "claim");
        if (!claim)
            break;
        int n = PQntuples(claim);
        if (n == 0) {
            PQclear(claim);
            break;
        }
        /* touch every field as the relay's message_build does */
        size_t bytes = 0;
        for (int i = 0; i < n; i++)
            for (int f = 0; f < PQnfields(claim); f++)
                bytes += (size_t)PQgetlength(claim, i, f);
        (void)bytes;
        ids.len = 0;
        sb_put(&ids, "{", 1);
        for (int i = 0; i < n; i++) {
            if (i)
                sb_put(&ids, ",", 1);
            sb_put(&ids, PQgetvalue(claim, i, 0), (size_t)PQgetlength(claim, i, 0));
        }
        sb_put(&ids, "}", 1);
        PQclear(claim);
        if (relay_record) {
            repeat_array(&outcomes, "0", n);
            repeat_array(&delays, "0", n);
            repeat_array(&errors, "\"\"", n);
            const char *mp[] = {ids.buf,    outcomes.buf, delays.buf,
                                errors.buf, owner,        delete_mode ? "true" : "false"};
            r = must(c, PQexecPrepared(c, "mark", 6, mp, NULL, NULL, 0), PGRES_TUPLES_OK, "record");
        } else {
            const char *mp[] = {ids.buf, owner};
            r = must(c, PQexecPrepared(c, "mark", 2, mp, NULL, NULL, 0), PGRES_COMMAND_OK, "mark");
        }
        if (!r)
            break;
        PQclear(r);
        atomic_fetch_add(&total, n);
    }
    free(ids.buf);
    free(outcomes.buf);
    free(delays.buf);
    free(errors.buf);
out:
    PQfinish(c);
    return NULL;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "d:w:b:o:r:m:")) != -1) {
        switch (opt) {
        case 'd': dsn = optarg; break;
        case 'w': workers = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'o': ordered = strcmp(optarg, "aggregate") == 0; break;
        case 'r': delete_mode = strcmp(optarg, "delete") == 0; break;
        case 'm': relay_record = strcmp(optarg, "relay") == 0; break;
        default:
            fprintf(stderr, "usage: bench_db -d DSN [-w N] [-b N] [-o none|aggregate] "
                            "[-r mark|delete] [-m simple|relay]\n");
            return 2;
        }
    }
    if (!dsn || workers < 1 || batch < 1) {
        fprintf(stderr, "bench_db: -d DSN is required; -w and -b must be positive\n");
        return 2;
    }
    pthread_t *t = calloc((size_t)workers, sizeof *t);
    double t0 = now_s();
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < workers; i++)
        pthread_join(t[i], NULL);
    double secs = now_s() - t0;
    free(t);
    if (atomic_load(&failed))
        return 1;
    long long n = atomic_load(&total);
    printf("%lld %.3f %.0f\n", n, secs, secs > 0 ? n / secs : 0.0);
    return 0;
}
