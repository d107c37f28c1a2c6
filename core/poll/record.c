#include "poll/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "db/pgarray.h"
#include "poll/queries.h"

/* Are the rows a mark recorded (their ids) all of the batch? A run's rows
 * are found by ctid without a lock of their own (queries.c): a slot reused
 * by another row would show here, before the commit. */
static int marked_ours(const PGresult *res, const batch *b)
{
    for (int r = 0; r < PQntuples(res); r++)
        if (!batch_has(b, atoll(PQgetvalue(res, r, 0))))
            return 0;
    return 1;
}

/* One statement for rows [from, to); relock: the claim's transaction has
 * ended, take the rows that are still pending and free. Returns the result
 * or NULL. */
static PGresult *record_range(session *s, const batch *b, const decision *d, int from, int to,
                              int relock, int plain_errors)
{
    const relay_config *cfg = s->st->cfg;
    const char *delete = cfg->retention == RETAIN_DELETE ? "true" : "false";
    const char *again = relock ? "true" : "false";
    int all_published = 1;
    for (int i = from; i < to; i++)
        all_published &= d[i].outcome == OUTCOME_PUBLISHED;
    pgarray ids, outcomes, delays, errors;
    pgarray_init(&ids);
    pgarray_init(&outcomes);
    pgarray_init(&delays);
    pgarray_init(&errors);
    /* mark, in the claim's transaction: the rows where it locked them (or
     * their ids); after it, record locks again whatever is still pending */
    int mark = all_published && !relock;
    for (int i = from; i < to; i++) {
        char num[24];
        const batch_row *r = &b->rows[i];
        if (mark && r->tid_text)
            pgarray_add(&ids, r->tid_text, 1); /* "(block,item)" has a comma */
        else
            pgarray_add(&ids, r->id_text, 0);
        if (mark)
            continue;
        snprintf(num, sizeof num, "%d", d[i].outcome);
        pgarray_add(&outcomes, num, 0);
        snprintf(num, sizeof num, "%lld", d[i].delay_ms);
        pgarray_add(&delays, num, 0);
        /* the last resort when a text still failed: nothing of the row's data */
        pgarray_add(&errors,
                    plain_errors && d[i].error[0] ? "error text not recordable" : d[i].error, 1);
    }
    PGresult *res;
    if (mark) {
        const char *params[] = {pgarray_text(&ids), delete};
        res = session_run(s, SESSION_OTHER, "mark", 2, params, PGRES_TUPLES_OK);
        if (res && queries_mark_returns_ids(s->st->cfg) && !marked_ours(res, b)) {
            log_scoped(OBX_LOG_WARN, s->scope,
                       "a row the claim read was recorded by another session and its place "
                       "taken by another row: the batch is recorded row by row");
            PQclear(res);
            res = NULL;
        }
    } else {
        const char *params[] = {pgarray_text(&ids),
                                pgarray_text(&outcomes),
                                pgarray_text(&delays),
                                pgarray_text(&errors),
                                delete,
                                again};
        res = session_run(s, SESSION_OTHER, "record", 6, params, PGRES_TUPLES_OK);
    }
    pgarray_free(&ids);
    pgarray_free(&outcomes);
    pgarray_free(&delays);
    pgarray_free(&errors);
    return res;
}

/* Adds a record result to counts; returns the rows it recorded. */
static long long tally(const session *s, PGresult *res, const decision *d, int from,
                       long long counts[OUTCOME_COUNT])
{
    long long total = 0;
    if (PQnfields(res) == 1) { /* mark: all published; the ids, or how many (queries.c) */
        int ids = queries_mark_returns_ids(s->st->cfg);
        total = ids ? PQntuples(res) : atoll(PQgetvalue(res, 0, 0));
        counts[d[from].outcome] += total;
    } else {
        for (int r = 0; r < PQntuples(res); r++) {
            int outcome = atoi(PQgetvalue(res, r, 0));
            long long n = atoll(PQgetvalue(res, r, 1));
            if (outcome >= 0 && outcome < OUTCOME_COUNT)
                counts[outcome] += n;
            total += n;
        }
    }
    PQclear(res);
    return total;
}

/* Until when recording is worth trying: while the rows are likely still
 * free (within a lease of the claim), and not past a stop's deadline. */
static long long give_up_at(session *s, long long claimed_at)
{
    const relay_config *cfg = s->st->cfg;
    long long at = claimed_at + cfg->lease_ms;
    if (atomic_load(&s->st->stop)) {
        long long stop_deadline = atomic_load(&s->st->stop_at_ms) + cfg->shutdown_timeout_ms;
        if (stop_deadline < at)
            at = stop_deadline;
    }
    return at;
}

/* Row by row, each in its own transaction, after the whole batch failed
 * for a reason in its data. */
static long long record_each(session *s, const batch *b, const decision *d, long long claimed_at,
                             long long counts[OUTCOME_COUNT])
{
    long long total = 0;
    for (int i = 0; i < b->count && s->conn && now_ms() < give_up_at(s, claimed_at); i++) {
        PGresult *res = record_range(s, b, d, i, i + 1, 1, 0);
        if (!res && s->conn)
            res = record_range(s, b, d, i, i + 1, 1, 1);
        if (res)
            total += tally(s, res, d, i, counts);
        else
            log_scoped(OBX_LOG_ERROR, s->scope, "event %s: its outcome cannot be recorded",
                       b->rows[i].event_id);
    }
    return total;
}

long long record_batch(session *s, const batch *b, const decision *d, long long claimed_at,
                       long long counts[OUTCOME_COUNT])
{
    PGresult *res = record_range(s, b, d, 0, b->count, 0, 0);
    if (res && session_commit(s) == 0)
        return tally(s, res, d, 0, counts);
    PQclear(res);
    if (s->conn) { /* the statement failed, the connection did not: the data did */
        session_rollback(s);
        return record_each(s, b, d, claimed_at, counts);
    }
    /* The session was lost with its locks (PostgreSQL restarted, or ended
     * the session of a relay that stopped answering): whatever is still
     * pending and free is recorded from a new one. */
    for (int tries = 0; now_ms() < give_up_at(s, claimed_at); tries++) {
        usleep(1000 * (tries < 5 ? 100 : 1000));
        /* even during a graceful stop: recording is what the stop waits for */
        if (session_connect(s, give_up_at(s, claimed_at), 0) < 0)
            break;
        res = record_range(s, b, d, 0, b->count, 1, 0);
        if (res)
            return tally(s, res, d, 0, counts);
    }
    log_scoped(OBX_LOG_ERROR, s->scope,
               "could not record %d outcomes; the events will be published again", b->count);
    return 0;
}
