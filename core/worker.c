#include "worker.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "claimer.h"
#include "flight.h"
#include "log.h"
#include "outcome.h"
#include "outputs.h"
#include "pgarray.h"
#include "queries.h"
#include "record.h"
#include "session.h"
#include "stats.h" /* metrics: call sites marked "stats:" */
#include "wakeup.h"

struct worker {
    relay_state *st;
    const relay_config *cfg;
    int index;
    char scope[32];
    session db;
    outputs outs;
    unsigned rand_state;
    claimer claimer; /* where the next ordered claim walks from */

    /* the current batch; all but flight belongs to the worker's thread */
    batch b;
    long long claimed_at;
    flight flight;
    obx_message *msgs;
    int *published, *after_failure;
    decision *decisions;
    arena arena;
    message_source source; /* how rows become messages, into arena */
};

static int stopping(const worker *w)
{
    return atomic_load(&w->st->stop) != 0;
}

/* Sleeps up to ms, waking early when a stop is requested. */
static void nap(worker *w, long long ms)
{
    for (long long slept = 0; slept < ms && !stopping(w); slept += 50)
        usleep(1000 * (ms - slept < 50 ? ms - slept : 50));
}

/* ---- claim ---- */

static int claim(worker *w)
{
    const char *params[CLAIM_PARAMS];
    int n = claimer_params(&w->claimer, params);
    PGresult *res = session_run(&w->db, SESSION_CLAIM, "claim", n, params, PGRES_TUPLES_OK);
    if (!res)
        return -1;
    w->claimed_at = now_ms();
    claimer_advance(&w->claimer, res);
    batch_take(&w->b, res);
    atomic_fetch_add(&w->st->stats.claimed, w->b.count);
    return w->b.count;
}

/* ---- publish ---- */

/* A run's events behind a row that cannot be a message are not offered:
 * they go back, unattempted, to wait for it. */
static void hold_behind_bad_rows(worker *w)
{
    if (w->outs.gen->run_length == 1)
        return;
    for (int i = 0; i < w->b.count; i++)
        w->published[i] = w->flight.slots[i].state != SLOT_BAD;
    batch_after_failure(&w->b, w->published, w->after_failure);
    for (int i = 0; i < w->b.count; i++)
        if (w->after_failure[i] && w->flight.slots[i].state == SLOT_AWAITING)
            flight_settle(&w->flight.slots[i], SLOT_ABORTED, OBX_RETRIABLE,
                          "behind an event of its aggregate that failed");
}

/* Turns rows into messages and offers each output its own; rows that cannot
 * be a message are settled at once. */
static void publish(worker *w)
{
    uint32_t seq = flight_begin(&w->flight, w->b.count);
    for (int i = 0; i < w->b.count; i++) {
        slot *s = &w->flight.slots[i];
        const batch_row *r = &w->b.rows[i];
        char err[256];
        if (r->payload_bytes > w->cfg->max_payload_bytes) {
            snprintf(err, sizeof err, "payload of %lld bytes exceeds max_payload_bytes (%d)",
                     r->payload_bytes, w->cfg->max_payload_bytes);
            flight_settle(s, SLOT_BAD, OBX_PERMANENT, err);
        } else if (message_build(&w->source, (result_row){w->b.res, r->res_row}, &w->msgs[i],
                                 &s->output, err, sizeof err) < 0) {
            flight_settle(s, SLOT_BAD, OBX_PERMANENT, err);
        } else {
            w->msgs[i].token = ((uint64_t)seq << 32) | (uint32_t)i;
            s->state = SLOT_AWAITING;
            stats_sent(w->st->metrics, w->cfg, s->output); /* stats: in flight */
        }
    }
    hold_behind_bad_rows(w);
    for (size_t out = 0; out < w->outs.count; out++)
        flight_publish(&w->flight, out, w->msgs, outputs_may_send(&w->outs, out));
}

/* ---- waiting for completions ---- */

/* The lease is the claim's transaction: it holds while the session is not
 * idle in it for a lease (session.c). */
static void renew_lease(worker *w)
{
    PQclear(session_run(&w->db, SESSION_OTHER, "renew", 0, NULL, PGRES_TUPLES_OK));
}

/* Waits for every completion, renewing the lease; a stop bounds the wait. */
static void await_completions(worker *w)
{
    long long renewed = w->claimed_at;
    const long long stuck_after = 5LL * w->cfg->lease_ms;
    for (;;) {
        stats_beat(); /* stats: liveness */
        int left = flight_left(&w->flight);
        if (left == 0)
            return;
        long long now = now_ms();
        if (stopping(w) && now >= atomic_load(&w->st->stop_at_ms) + w->cfg->shutdown_timeout_ms) {
            log_scoped(OBX_LOG_WARN, w->scope,
                       "shutdown deadline: %d messages still in flight are released", left);
            flight_abort(&w->flight, 1);
            return;
        }
        if (now - w->claimed_at > stuck_after) {
            log_scoped(OBX_LOG_ERROR, w->scope,
                       "driver gave no completion for %d messages in %lld ms: re-creating it", left,
                       stuck_after);
            flight_abort(&w->flight, 0);
            outputs_mark_all_broken(&w->outs);
            return;
        }
        outputs_close_broken(&w->outs); /* a broken instance owes what only close gives */
        if (now - renewed > w->cfg->lease_ms / 3) {
            renew_lease(w);
            renewed = now;
        }
        if (!outputs_poll(&w->outs, 20))
            flight_wait(&w->flight, 20);
    }
}

/* ---- deciding and recording ---- */

static verdict verdict_of(const slot *s)
{
    static const verdict_kind kinds[] = {
        [SLOT_AWAITING] = VERDICT_COMPLETED, [SLOT_DONE] = VERDICT_COMPLETED,
        [SLOT_REFUSED] = VERDICT_REFUSED,    [SLOT_ABORTED] = VERDICT_ABORTED,
        [SLOT_BAD] = VERDICT_BAD_ROW,        [SLOT_NOT_SENT] = VERDICT_NOT_SENT,
    };
    return (verdict){kinds[s->state], s->status, s->native_code, s->detail};
}

/* Tells each output's health what its messages said. */
static void update_health(worker *w)
{
    for (int i = 0; i < w->b.count; i++) {
        const slot *s = &w->flight.slots[i];
        if (s->state == SLOT_DONE && s->status == OBX_OK)
            outputs_succeeded(&w->outs, s->output);
        else if ((s->state == SLOT_DONE || s->state == SLOT_REFUSED) &&
                 s->status == OBX_UNAVAILABLE)
            health_down(outputs_health(&w->outs, s->output), s->detail);
    }
}

static void decide(worker *w)
{
    retry_policy policy = {w->cfg->max_attempts, w->cfg->backoff_initial_ms, w->cfg->backoff_max_ms,
                           w->cfg->backoff_multiplier, w->cfg->backoff_jitter};
    for (int i = 0; i < w->b.count; i++)
        w->published[i] =
            w->flight.slots[i].state == SLOT_DONE && w->flight.slots[i].status == OBX_OK;
    if (w->cfg->ordering == ORDERING_AGGREGATE)
        batch_after_failure(&w->b, w->published, w->after_failure);
    else
        memset(w->after_failure, 0, w->b.count * sizeof *w->after_failure);
    for (int i = 0; i < w->b.count; i++) {
        const slot *s = &w->flight.slots[i];
        verdict v = verdict_of(s);
        long long pause = health_wait_ms(outputs_health(&w->outs, s->output));
        double r = (double)rand_r(&w->rand_state) / ((double)RAND_MAX + 1.0);
        decision *d = &w->decisions[i];
        outcome_decide(&policy, &v, w->b.rows[i].attempt, w->after_failure[i],
                       pause > 100 ? pause : 100, r, d);
        /* stats: per-output and per-route outcome, latencies */
        stats_observe_completion(w->st->metrics, w->cfg, s->output,
                                 s->state == SLOT_BAD ? NULL : &w->msgs[i], w->claimed_at,
                                 d->outcome, s->state == SLOT_REFUSED);
        if (d->outcome == OUTCOME_DEAD)
            log_scoped(OBX_LOG_WARN, w->scope, "event %s dead-lettered: %s", w->b.rows[i].event_id,
                       d->error);
    }
}

static void record(worker *w)
{
    long long counts[OUTCOME_COUNT] = {0};
    long long total = record_batch(&w->db, &w->b, w->decisions, w->claimed_at, counts);
    if (total > 0 && total < w->b.count)
        log_scoped(OBX_LOG_WARN, w->scope,
                   "lease lost on %lld of %d rows (another worker took them over "
                   "and will publish them again)",
                   w->b.count - total, w->b.count);
    relay_stats *stats = &w->st->stats;
    atomic_fetch_add(&stats->published, counts[OUTCOME_PUBLISHED]);
    atomic_fetch_add(&stats->retried, counts[OUTCOME_RETRY]);
    atomic_fetch_add(&stats->dead, counts[OUTCOME_DEAD]);
    atomic_fetch_add(&stats->released, counts[OUTCOME_RELEASE]);
    atomic_fetch_add(&stats->deferred, counts[OUTCOME_DEFER]);
}

/* ---- idle ---- */

static int nothing_pending(worker *w)
{
    PGresult *res = session_run(&w->db, SESSION_OTHER, "pending", 0, NULL, PGRES_TUPLES_OK);
    if (!res)
        return 0;
    int none = strcmp(PQgetvalue(res, 0, 0), "f") == 0;
    PQclear(res);
    return none;
}

/* ---- the loop ---- */

/* One round: returns 0 after a batch, 1 when idle, -1 after a failure. */
static int one_round(worker *w)
{
    /* live reload: between batches, the newest config generation (outputs.c) */
    if (outputs_switch(&w->outs)) {
        w->cfg = w->outs.gen->cfg;
        w->source.cfg = w->cfg;
        claimer_configure(&w->claimer, w->cfg, w->outs.gen->run_length);
    }
    if (session_connect(&w->db, LLONG_MAX, 1) < 0)
        return -1;
    if (outputs_ensure(&w->outs, 0) != 0)
        return -1;
    if (!outputs_any_usable(&w->outs)) { /* every output paused: claim nothing */
        outputs_poll(&w->outs, 0);
        nap(w, outputs_wait_ms(&w->outs) ? outputs_wait_ms(&w->outs) : 100);
        return 0;
    }
    if (session_begin(&w->db) < 0)
        return -1;
    int n = claim(w);
    if (n <= 0) {
        session_rollback(&w->db);
        batch_clear(&w->b);
        return n < 0 ? -1 : 1;
    }
    publish(w);
    await_completions(w);
    update_health(w);
    decide(w);
    record(w);
    batch_clear(&w->b);
    arena_reset(&w->arena);
    return 0;
}

void *worker_main(void *arg)
{
    worker *w = arg;
    stats_thread_register(w->st->metrics, w->index); /* stats: liveness */
    if (outputs_ensure(&w->outs, 1) < 0) {
        atomic_store(&w->st->failed, 1);
        state_request_stop(w->st, now_ms());
        return NULL;
    }
    while (!stopping(w)) {
        stats_beat(); /* stats: liveness */
        int rc = one_round(w);
        if (rc < 0) {
            nap(w, 100);
        } else if (rc == 1) {
            if (w->st->drain && nothing_pending(w)) {
                log_scoped(OBX_LOG_INFO, w->scope, "drained: nothing pending or in flight");
                state_request_stop(w->st, now_ms());
                break;
            }
            wakeup_wait(&w->db, &w->outs, w->cfg->poll_interval_ms);
        }
    }
    outputs_close_all(&w->outs);
    session_disconnect(&w->db);
    return NULL;
}

void worker_cancel(worker *w, int claims_only)
{
    session_cancel(&w->db, claims_only ? SESSION_CLAIM : SESSION_OTHER);
}

worker *worker_new(relay_state *st, int index, const char *payload_type)
{
    worker *w = calloc(1, sizeof *w);
    w->st = st;
    w->cfg = st->cfg;
    w->index = index;
    snprintf(w->scope, sizeof w->scope, "worker %d", index);
    session_init(&w->db, st, w->scope, payload_type);
    outputs_init(&w->outs, st, index, flight_on_complete, flight_on_refuse, &w->flight);
    claimer_configure(&w->claimer, w->cfg, w->outs.gen->run_length);
    size_t n = (size_t)w->cfg->batch_size;
    batch_init(&w->b, (int)n);
    flight_init(&w->flight, (int)n, &w->outs, w->scope);
    w->msgs = calloc(n, sizeof *w->msgs);
    w->published = calloc(n, sizeof *w->published);
    w->after_failure = calloc(n, sizeof *w->after_failure);
    w->decisions = calloc(n, sizeof *w->decisions);
    w->source = (message_source){w->cfg, st->payload, &w->arena};
    w->rand_state = (unsigned)(getpid() * 7919 + index * 104729 + now_ms());
    return w;
}

void worker_free(worker *w)
{
    if (!w)
        return;
    outputs_free(&w->outs);
    session_free(&w->db);
    batch_free(&w->b);
    arena_free(&w->arena);
    claimer_free(&w->claimer);
    flight_free(&w->flight);
    free(w->msgs);
    free(w->published);
    free(w->after_failure);
    free(w->decisions);
    free(w);
}
