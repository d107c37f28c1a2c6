#include "poll/lane.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "poll/queries.h"
#include "poll/record.h"

void lane_init(lane *l, lane_shared *sh, flight *f, const char *payload_type)
{
    memset(l, 0, sizeof *l);
    l->sh = sh;
    l->flight = f;
    session_init(&l->db, sh->st, sh->scope, payload_type);
    size_t n = (size_t)sh->cfg->batch_size;
    batch_init(&l->b, (int)n);
    l->msgs = calloc(n, sizeof *l->msgs);
    l->exts = calloc(n, sizeof *l->exts);
    l->published = calloc(n, sizeof *l->published);
    l->after_failure = calloc(n, sizeof *l->after_failure);
    l->decisions = calloc(n, sizeof *l->decisions);
    l->settle = calloc(n, sizeof *l->settle);
    l->source = (message_source){sh->cfg, sh->st->payload, &l->arena};
}

void lane_free(lane *l)
{
    session_free(&l->db);
    batch_free(&l->b);
    arena_free(&l->arena);
    free(l->msgs);
    free(l->exts);
    free(l->published);
    free(l->after_failure);
    free(l->decisions);
    free(l->settle);
}

void lane_use_config(lane *l, const relay_config *cfg)
{
    l->source.cfg = cfg;
}

/* ---- claim ---- */

static int claim(lane *l)
{
    lane_shared *sh = l->sh;
    const char *params[CLAIM_PARAMS];
    int n = claimer_params(&sh->claimer, params);
    PGresult *res = session_run(&l->db, SESSION_CLAIM, "claim", n, params, PGRES_TUPLES_OK);
    if (!res)
        return -1;
    l->claimed_at = l->renewed_at = now_ms();
    claimer_advance(&sh->claimer, res);
    batch_take(&l->b, res);
    atomic_fetch_add(&sh->st->stats.claimed, l->b.count);
    return l->b.count;
}

/* ---- publish ---- */

void lane_hold_behind_bad_rows(lane *l)
{
    if (l->sh->run_length == 1)
        return;
    slot *slots = l->flight->slots;
    int bad = 0;
    for (int i = 0; i < l->b.count; i++)
        bad |= !(l->published[i] = slots[i].state != SLOT_BAD);
    if (!bad)
        return;
    batch_after_failure(&l->b, l->published, l->after_failure);
    for (int i = 0; i < l->b.count; i++)
        if (l->after_failure[i] && slots[i].state == SLOT_AWAITING)
            flight_settle(&slots[i], SLOT_ABORTED, OBX_RETRIABLE,
                          "behind an event of its aggregate that failed");
}

/* Turns rows into messages and offers each output its own; rows that cannot
 * be a message are settled at once. */
static void publish(lane *l)
{
    lane_shared *sh = l->sh;
    const relay_config *cfg = sh->cfg;
    flight_begin(l->flight, l->b.count);
    for (int i = 0; i < l->b.count; i++) {
        slot *s = &l->flight->slots[i];
        const batch_row *r = &l->b.rows[i];
        char err[256];
        int built;
        if (r->payload_bytes > cfg->max_payload_bytes) {
            snprintf(err, sizeof err, "payload of %lld bytes exceeds max_payload_bytes (%d)",
                     r->payload_bytes, cfg->max_payload_bytes);
            flight_settle(s, SLOT_BAD, OBX_PERMANENT, err);
        } else if ((built = batch_message(&l->b, i, &l->source, &l->msgs[i], &l->exts[i], &s->route,
                                          err, sizeof err)) < 0) {
            flight_settle(s, SLOT_BAD, OBX_PERMANENT, err);
        } else if (built == MESSAGE_DROPPED) {
            s->output = s->route->output_index; /* none: never offered */
            flight_settle(s, SLOT_DROPPED, OBX_OK, err);
        } else {
            l->msgs[i].token = flight_token(l->flight, i);
            s->output = s->route->output_index;
            s->state = SLOT_AWAITING;
        }
    }
    lane_hold_behind_bad_rows(l);
    outputs *outs = &sh->dl->outs;
    for (size_t out = 0; out < outs->count; out++)
        flight_publish(l->flight, out, l->msgs, l->exts, outputs_may_send(outs, out));
}

int lane_start(lane *l)
{
    if (session_begin(&l->db) < 0)
        return -1;
    int n = claim(l);
    if (n <= 0) {
        session_rollback(&l->db);
        batch_clear(&l->b);
        return n;
    }
    l->busy = 1;
    publish(l);
    return n;
}

void lane_renew(lane *l)
{
    if (!l->busy || l->db.running != SESSION_IDLE ||
        now_ms() - l->renewed_at <= l->sh->cfg->lease_ms / 3)
        return;
    l->renewed_at = now_ms();
    PQclear(session_run_plain(&l->db, SESSION_OTHER, "renew", 0, NULL, PGRES_TUPLES_OK));
}

/* ---- deciding and recording ---- */

void lane_decide(lane *l)
{
    lane_shared *sh = l->sh;
    const slot *slots = l->flight->slots;
    int failed = 0;
    for (int i = 0; i < l->b.count; i++)
        failed |= !(l->published[i] = slot_succeeded(&slots[i]));
    if (sh->cfg->ordering == ORDERING_AGGREGATE &&
        failed) /* nothing is behind a failure without one */
        batch_after_failure(&l->b, l->published, l->after_failure);
    else
        memset(l->after_failure, 0, l->b.count * sizeof *l->after_failure);
    for (int i = 0; i < l->b.count; i++) {
        const slot *s = &slots[i];
        l->settle[i] = (settle_item){
            .output = s->output,
            .v = flight_verdict(s),
            .attempt = l->b.rows[i].attempt,
            .after_failure = l->after_failure[i],
            .route = s->route,
            .offered = s->offered,
            .created_at_us = l->msgs[i].created_at_us,
            .since_ms = l->claimed_at,
        };
    }
    delivery_settle(sh->dl, l->settle, (size_t)l->b.count, l->decisions);
    for (int i = 0; i < l->b.count; i++)
        if (l->decisions[i].outcome == OUTCOME_DEAD)
            log_scoped(OBX_LOG_WARN, sh->scope, "event %s dead-lettered: %s", l->b.rows[i].event_id,
                       l->decisions[i].error);
}

static void record(lane *l)
{
    long long counts[OUTCOME_COUNT] = {0};
    long long total = record_batch(&l->db, &l->b, l->decisions, l->claimed_at, counts);
    if (total > 0 && total < l->b.count)
        log_scoped(OBX_LOG_WARN, l->sh->scope,
                   "lease lost on %lld of %d rows (another worker took them over "
                   "and will publish them again)",
                   l->b.count - total, l->b.count);
    relay_stats *stats = &l->sh->st->stats;
    atomic_fetch_add(&stats->published, counts[OUTCOME_PUBLISHED]);
    atomic_fetch_add(&stats->retried, counts[OUTCOME_RETRY]);
    atomic_fetch_add(&stats->dead, counts[OUTCOME_DEAD]);
    atomic_fetch_add(&stats->released, counts[OUTCOME_RELEASE]);
    atomic_fetch_add(&stats->deferred, counts[OUTCOME_DEFER]);
}

void lane_finish(lane *l)
{
    lane_decide(l);
    record(l);
    flight_end(l->flight);
    batch_clear(&l->b);
    arena_reset(&l->arena);
    l->busy = 0;
}
