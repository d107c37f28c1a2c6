#include "wal_publish.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "counters.h"
#include "text.h"
#include "wal_dead.h"

#define SCOPE "wal"
#define ROUND 500
/* A token names the event's seq and which send it answers. */
#define TOKEN(ev) ((ev)->seq << 16 | ((ev)->sends & 0xffff))

static void on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail)
{
    wal_publisher *p = arg;
    pthread_mutex_lock(&p->lock);
    if (p->inbox_len == p->inbox_cap) {
        p->inbox_cap = p->inbox_cap ? p->inbox_cap * 2 : 1024;
        p->inbox = realloc(p->inbox, p->inbox_cap * sizeof *p->inbox);
    }
    wal_done *d = &p->inbox[p->inbox_len++];
    d->token = token;
    d->status = status;
    d->native_code = native_code;
    text_copy(d->detail, sizeof d->detail, detail ? detail : "");
    pthread_cond_signal(&p->arrived);
    pthread_mutex_unlock(&p->lock);
}

/* Called inside publish_batch, on the relay's thread: keep the reason. */
static void on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    wal_publisher *p = arg;
    (void)native_code;
    for (size_t i = 0; i < p->round_cap; i++)
        if (p->batch_evs[i] && TOKEN(p->batch_evs[i]) == token) {
            text_copy(p->refused[i], sizeof p->refused[i], detail ? detail : "");
            return;
        }
}

int wal_publisher_init(wal_publisher *p, relay_state *st, wal_window *w)
{
    memset(p, 0, sizeof *p);
    const relay_config *cfg = st->cfg;
    p->st = st;
    p->w = w;
    p->source = (message_source){cfg, st->payload, &p->scratch};
    p->policy = (retry_policy){cfg->max_attempts, cfg->backoff_initial_ms, cfg->backoff_max_ms,
                               cfg->backoff_multiplier, cfg->backoff_jitter};
    p->rand_state = (unsigned)time(NULL) ^ (unsigned)getpid();
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->arrived, NULL);
    p->round_cap = ROUND;
    p->msgs = calloc(ROUND, sizeof *p->msgs);
    p->batch = calloc(ROUND, sizeof *p->batch);
    p->evs = calloc(ROUND, sizeof *p->evs);
    p->batch_evs = calloc(ROUND, sizeof *p->batch_evs);
    p->out_of = calloc(ROUND, sizeof *p->out_of);
    p->accept = calloc(ROUND, sizeof *p->accept);
    p->refused = calloc(ROUND, sizeof *p->refused);
    outputs_init(&p->outs, st, 0, on_complete, on_refuse, p);
    p->may_send = calloc(p->outs.count, sizeof *p->may_send);
    snprintf(p->outs.scope, sizeof p->outs.scope, SCOPE);
    return outputs_ensure(&p->outs, 1) < 0 ? -1 : 0;
}

void wal_publisher_free(wal_publisher *p)
{
    outputs_free(&p->outs);
    arena_free(&p->scratch);
    if (p->db)
        PQfinish(p->db);
    free(p->inbox);
    free(p->taken);
    free(p->msgs);
    free(p->batch);
    free(p->evs);
    free(p->batch_evs);
    free(p->out_of);
    free(p->accept);
    free(p->refused);
    free(p->may_send);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->arrived);
}

/* The dead-letter row, then the event is finished. When the database cannot
 * take it now, the event waits (its aggregate too) and is written later. */
static void dead_letter(wal_publisher *p, wal_event *ev, const char *error, long long now)
{
    char err[512] = "";
    if (p->db && db_lost(p->db)) {
        PQfinish(p->db);
        p->db = NULL;
    }
    if (!p->db)
        p->db = db_connect(p->st->cfg, "outbox-relay", err, sizeof err);
    uint64_t lsn = wal_event_commit_lsn(ev); /* 0 while a long transaction is still read */
    if (p->db && wal_dead_insert(p->db, p->st->cfg, ev->row, ev->attempt, error, lsn, err,
                                 sizeof err) == 0) {
        log_scoped(OBX_LOG_WARN, SCOPE, "event %s dead-lettered: %s",
                   ev->row->v[WF_EVENT_ID] ? ev->row->v[WF_EVENT_ID] : "(no event_id)", error);
        atomic_fetch_add(&p->st->stats.dead, 1);
        wal_window_finish(p->w, ev);
        return;
    }
    log_scoped(OBX_LOG_ERROR, SCOPE, "cannot write a dead letter (retrying in 1 s): %s", err);
    if (!ev->dead_error)
        ev->dead_error = strdup(error);
    wal_window_retry(p->w, ev, now + 1000);
}

/* /metrics: the outcome per output and route, and for a published event its
 * publish and commit-to-acknowledgement times, as poll mode's workers feed
 * them. The message was built in the round's scratch arena, gone by now: the
 * fields routing and the histograms read are taken from the row again. */
static void observe(wal_publisher *p, const wal_event *ev, const verdict *v, int outcome)
{
    if (v->kind == VERDICT_BAD_ROW) { /* never became a message: no route, not in flight */
        counters_observe_completion(p->st->metrics, p->st->cfg, ev->output, NULL, 0, outcome, 0);
        return;
    }
    obx_message m = {.event_type = ev->row->v[WF_EVENT_TYPE],
                     .aggregate_type = ev->row->v[WF_AGGREGATE_TYPE],
                     .created_at_us = ev->row->created_at_us};
    counters_observe_completion(p->st->metrics, p->st->cfg, ev->output, &m, ev->sent_ms, outcome,
                             v->kind == VERDICT_REFUSED);
}

/* A verdict on an event that was offered (or could not become a message). */
static void decide(wal_publisher *p, wal_event *ev, const verdict *v, long long now)
{
    long long pause = health_wait_ms(outputs_health(&p->outs, ev->output));
    double r = (double)rand_r(&p->rand_state) / ((double)RAND_MAX + 1.0);
    decision d;
    outcome_decide(&p->policy, v, ev->attempt, 0, pause > 100 ? pause : 100, r, &d);
    observe(p, ev, v, d.outcome);
    switch (d.outcome) {
    case OUTCOME_PUBLISHED:
        atomic_fetch_add(&p->st->stats.published, 1);
        wal_window_finish(p->w, ev);
        break;
    case OUTCOME_RETRY:
        atomic_fetch_add(&p->st->stats.retried, 1);
        wal_window_retry(p->w, ev, now + d.delay_ms);
        break;
    case OUTCOME_DEAD: dead_letter(p, ev, d.error, now); break;
    default: /* the output failed, not the event: no attempt counted */
        atomic_fetch_add(&p->st->stats.deferred, 1);
        ev->attempt--;
        wal_window_retry(p->w, ev, now + (d.delay_ms > 0 ? d.delay_ms : 100));
        break;
    }
}

/* Offers one output its share of the round, in window order. */
static void publish_output(wal_publisher *p, size_t out, size_t count, long long now)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (p->out_of[i] == out) {
            p->evs[i]->sends++;
            p->evs[i]->attempt++;
            p->evs[i]->state = EV_IN_FLIGHT;
            p->evs[i]->sent_ms = now;
            counters_sent(p->st->metrics, p->st->cfg, out); /* in flight until observed */
            p->msgs[i].token = TOKEN(p->evs[i]);
            p->msgs[i].attempt = p->evs[i]->attempt;
            p->batch[n] = p->msgs[i];
            p->batch_evs[n] = p->evs[i];
            p->accept[n] = OBX_RETRIABLE;
            p->refused[n][0] = '\0';
            n++;
        }
    if (n == 0)
        return;
    output_instance *oi = &p->outs.out[out];
    p->in_flight += (long)n;
    obx_status rc = oi->host->driver->def.publish_batch(oi->inst, p->batch, n, p->accept);
    if (rc == OBX_FATAL)
        atomic_store(&oi->broken, 1);
    for (size_t k = 0; k < n; k++) {
        if (p->accept[k] == OBX_OK)
            continue;
        wal_event *ev = p->batch_evs[k];
        p->in_flight--;
        obx_status status = rc == OBX_FATAL ? OBX_FATAL : p->accept[k];
        if (status == OBX_UNAVAILABLE)
            health_down(outputs_health(&p->outs, out), p->refused[k]);
        verdict v = {VERDICT_REFUSED, status, 0,
                     p->refused[k][0] ? p->refused[k] : "refused by the driver"};
        decide(p, ev, &v, now);
    }
    memset(p->batch_evs, 0, n * sizeof *p->batch_evs);
}

int wal_publisher_send(wal_publisher *p, long long now)
{
    size_t count = 0, held = 0;
    wal_event *hold[ROUND];
    wal_event *ev;
    char err[OUTCOME_ERROR_MAX];
    /* once per round: a paused output without a probe takes one round as its probe */
    int any = 0;
    for (size_t i = 0; i < p->outs.count; i++)
        any |= p->may_send[i] = outputs_may_send(&p->outs, i);
    if (!any)
        return 0; /* the stream pauses: nothing is built, nothing attempted */
    while (count < p->round_cap && held < ROUND && (ev = wal_window_next(p->w, now))) {
        if (ev->dead_error) { /* its dead letter could not be written before */
            char *error = ev->dead_error;
            ev->dead_error = NULL;
            dead_letter(p, ev, error, now);
            free(error);
            continue;
        }
        event_fields f = {ev->row->v[WF_EVENT_ID],     ev->row->v[WF_AGGREGATE_TYPE],
                          ev->row->v[WF_AGGREGATE_ID], ev->row->v[WF_EVENT_TYPE],
                          ev->row->v[WF_PAYLOAD],      ev->row->v[WF_HEADERS],
                          ev->row->v[WF_DESTINATION],  ev->row->len[WF_PAYLOAD],
                          ev->row->created_at_us,      ev->attempt + 1};
        size_t out = 0;
        if (message_build_fields(&p->source, &f, &p->msgs[count], &out, err, sizeof err) < 0) {
            ev->attempt++;
            verdict v = {VERDICT_BAD_ROW, OBX_PERMANENT, 0, err};
            decide(p, ev, &v, now);
            continue;
        }
        ev->output = out;
        if (!p->may_send[out]) {
            hold[held++] = ev;
            continue;
        }
        p->evs[count] = ev;
        p->out_of[count++] = out;
    }
    while (held > 0) /* back at the front, in their order */
        wal_window_unready(p->w, hold[--held]);
    for (size_t out = 0; out < p->outs.count && count > 0; out++)
        publish_output(p, out, count, now);
    arena_reset(&p->scratch);
    return (int)count;
}

int wal_publisher_settle(wal_publisher *p, long long now)
{
    pthread_mutex_lock(&p->lock);
    wal_done *t = p->taken;
    size_t cap = p->taken_cap, n = p->inbox_len;
    p->taken = p->inbox;
    p->taken_cap = p->inbox_cap;
    p->inbox = t;
    p->inbox_cap = cap;
    p->inbox_len = 0;
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < n; i++) {
        const wal_done *d = &p->taken[i];
        wal_event *ev = wal_window_find(p->w, d->token >> 16);
        if (!ev || ev->state != EV_IN_FLIGHT || (ev->sends & 0xffff) != (d->token & 0xffff))
            continue; /* answered already, or from before a reconnect */
        p->in_flight--;
        if (d->status == OBX_OK)
            outputs_succeeded(&p->outs, ev->output);
        else if (d->status == OBX_UNAVAILABLE)
            health_down(outputs_health(&p->outs, ev->output), d->detail);
        else if (d->status == OBX_FATAL)
            atomic_store(&p->outs.out[ev->output].broken, 1);
        verdict v = {VERDICT_COMPLETED, d->status, d->native_code, d->detail};
        decide(p, ev, &v, now);
    }
    return (int)n;
}

void wal_publisher_tend(wal_publisher *p)
{
    outputs_close_broken(&p->outs); /* completes what they held, as aborted */
    outputs_ensure(&p->outs, 0);
    outputs_any_usable(&p->outs);
    outputs_poll(&p->outs, 0);
}

void wal_publisher_wait(wal_publisher *p, int ms)
{
    if (outputs_poll(&p->outs, ms))
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&p->lock);
    if (p->inbox_len == 0)
        pthread_cond_timedwait(&p->arrived, &p->lock, &until);
    pthread_mutex_unlock(&p->lock);
}

void wal_publisher_abort(wal_publisher *p)
{
    outputs_close_all(&p->outs);
    wal_publisher_settle(p, 0);
    p->in_flight = 0;
    outputs_ensure(&p->outs, 0);
}
