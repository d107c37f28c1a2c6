#include "window/window_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "telemetry/counters.h"

#define SCOPE "wal"
#define ROUND 500
/* A token names the event's seq (key) and which send it answers (check). */
#define TOKEN(ev) delivery_token((ev)->seq, (ev)->sends)

static void init(window_publisher *p, relay_state *st, window *w, const char *scope, long only)
{
    memset(p, 0, sizeof *p);
    const relay_config *cfg = st->cfg;
    p->st = st;
    p->w = w;
    p->source = (message_source){cfg, st->payload, &p->scratch};
    completions_init(&p->done);
    p->round_cap = ROUND;
    p->msgs = calloc(ROUND, sizeof *p->msgs);
    p->batch = calloc(ROUND, sizeof *p->batch);
    p->exts = calloc(ROUND, sizeof *p->exts);
    p->batch_ext = calloc(ROUND, sizeof *p->batch_ext);
    p->evs = calloc(ROUND, sizeof *p->evs);
    p->batch_evs = calloc(ROUND, sizeof *p->batch_evs);
    p->out_of = calloc(ROUND, sizeof *p->out_of);
    p->accept = calloc(ROUND, sizeof *p->accept);
    p->refused = calloc(ROUND, sizeof *p->refused);
    delivery_init(&p->dl, st, 0, completions_put, &p->done);
    p->may_send = calloc(p->dl.outs.count, sizeof *p->may_send);
    snprintf(p->dl.outs.scope, sizeof p->dl.outs.scope, "%s", scope);
    p->dl.outs.only = only;
}

int window_publisher_init(window_publisher *p, relay_state *st, window *w, side_upkeep upkeep,
                          void *upkeep_arg)
{
    init(p, st, w, SCOPE, OUTPUTS_ROUTED);
    window_side_start(&p->side, st, upkeep, upkeep_arg);
    return outputs_ensure(&p->dl.outs, 1) < 0 ? -1 : 0;
}

int window_publisher_init_hooked(window_publisher *p, relay_state *st, window *w,
                                 const window_hooks *hooks)
{
    init(p, st, w, hooks->scope, hooks->only_output);
    p->hooks = hooks;
    return outputs_ensure(&p->dl.outs, 1) < 0 ? -1 : 0;
}

void window_publisher_free(window_publisher *p)
{
    if (!p->hooks)
        window_side_stop(&p->side);
    delivery_free(&p->dl);
    arena_free(&p->scratch);
    completions_free(&p->done);
    free(p->msgs);
    free(p->batch);
    free(p->exts);
    free(p->batch_ext);
    free(p->evs);
    free(p->batch_evs);
    free(p->out_of);
    free(p->accept);
    free(p->refused);
    free(p->may_send);
}

/* The dead-letter row is written by the side thread (window_side.c); the event stays
 * unfinished (its aggregate waits behind it, the slot is not confirmed past
 * it) until the row is in (bury_written). */
static void dead_letter(window_publisher *p, window_event *ev, const char *error)
{
    ev->sends++;              /* a late completion of its last send finds nothing */
    ev->state = EV_IN_FLIGHT; /* neither sent again nor finished meanwhile */
    window_side_submit(&p->side, ev->seq, p->epoch, ev->row, ev->attempt, window_event_commit_lsn(ev),
                    error);
    ev->row = NULL; /* the writer's now */
}

/* The events whose dead-letter rows were written are finished. */
static void bury_written(window_publisher *p)
{
    if (p->hooks)
        return; /* no dead letters */
    dead_job *jobs = window_side_take(&p->side);
    for (dead_job *j = jobs; j; j = j->next) {
        window_event *ev = j->epoch == p->epoch ? window_find(p->w, j->seq) : NULL;
        if (!ev || ev->row)
            continue; /* from before a reconnect: the slot sends it again */
        atomic_fetch_add(&p->st->stats.dead, 1);
        ev->ended = WINDOW_DEAD_LETTERED;
        window_finish(p->w, ev);
    }
    window_side_free_jobs(jobs);
}

/* Finished: its hook hears it while its row is there. */
static void end(window_publisher *p, window_event *ev, int how, const char *error)
{
    ev->ended = how;
    if (p->hooks && p->hooks->ended)
        p->hooks->ended(p->hooks->arg, ev, error);
    window_finish(p->w, ev);
}

/* A verdict on an event that was offered (or could not become a message). */
static void decide(window_publisher *p, window_event *ev, const verdict *v, long long now)
{
    settle_item it = {
        .output = ev->output,
        .v = *v,
        .attempt = ev->attempt,
        .route = v->kind == VERDICT_BAD_ROW ? NULL : ev->route,
        .offered = v->kind != VERDICT_BAD_ROW && v->kind != VERDICT_DROPPED,
        .created_at_us = ev->row->created_at_us,
        .since_ms = ev->sent_ms,
    };
    decision d;
    delivery_settle(&p->dl, &it, 1, &d);
    switch (d.outcome) {
    case OUTCOME_PUBLISHED:
        if (v->kind != VERDICT_DROPPED)
            atomic_fetch_add(&p->st->stats.published, 1);
        end(p, ev, v->kind == VERDICT_DROPPED ? WINDOW_DROPPED : WINDOW_ACKED, NULL);
        break;
    case OUTCOME_RETRY:
        atomic_fetch_add(&p->st->stats.retried, 1);
        window_retry(p->w, ev, now + d.delay_ms);
        break;
    case OUTCOME_DEAD:
        if (p->hooks)
            end(p, ev, WINDOW_GIVEN_UP, d.error);
        else
            dead_letter(p, ev, d.error);
        break;
    default: /* the output failed, not the event: no attempt counted */
        atomic_fetch_add(&p->st->stats.deferred, 1);
        ev->attempt--;
        window_retry(p->w, ev, now + (d.delay_ms > 0 ? d.delay_ms : 100));
        break;
    }
}

/* Offers one output its share of the round, in window order. */
static void publish_output(window_publisher *p, size_t out, size_t count, long long now)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (p->out_of[i] == out) {
            p->evs[i]->sends++;
            p->evs[i]->attempt++;
            p->evs[i]->state = EV_IN_FLIGHT;
            p->evs[i]->sent_ms = now;
            p->msgs[i].token = TOKEN(p->evs[i]);
            p->msgs[i].attempt = p->evs[i]->attempt;
            p->batch[n] = p->msgs[i];
            p->batch_ext[n] = p->exts[i];
            p->batch_evs[n] = p->evs[i];
            n++;
        }
    if (n == 0)
        return;
    p->in_flight += (long)n;
    if (delivery_publish(&p->dl, out, p->batch, p->batch_ext, n, p->accept, p->refused) == n)
        return;
    for (size_t k = 0; k < n; k++) {
        if (p->accept[k] == OBX_OK)
            continue;
        p->in_flight--;
        verdict v = {VERDICT_REFUSED, p->accept[k], 0, p->refused[k]};
        decide(p, p->batch_evs[k], &v, now);
    }
}

/* The wall clock, as the database's available_at is written in. */
static long long wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int window_publisher_send(window_publisher *p, long long now)
{
    size_t count = 0, held = 0;
    window_event *hold[ROUND];
    window_event *ev;
    char err[OUTCOME_ERROR_MAX];
    /* once per round: a paused output without a probe takes one round as its probe */
    int any = 0;
    for (size_t i = 0; i < p->dl.outs.count; i++)
        any |= p->may_send[i] = outputs_may_send(&p->dl.outs, i);
    p->paused = !any;
    if (!any)
        return 0; /* the stream pauses: nothing is built, nothing attempted */
    long long wall_us = 0;
    while (count < p->round_cap && held < ROUND && (ev = window_next(p->w, now))) {
        if (!wall_us)
            wall_us = wall_clock_us();
        if (ev->row->available_at_us > wall_us) { /* enqueued with a delay: held until due */
            window_retry(p->w, ev, now + (ev->row->available_at_us - wall_us + 999) / 1000);
            continue;
        }
        event_fields f = {ev->row->v[WF_EVENT_ID],
                          ev->row->v[WF_AGGREGATE_TYPE],
                          ev->row->v[WF_AGGREGATE_ID],
                          ev->row->v[WF_EVENT_TYPE],
                          ev->row->v[WF_PAYLOAD],
                          ev->row->v[WF_HEADERS],
                          ev->row->v[WF_DESTINATION],
                          ev->row->len[WF_PAYLOAD],
                          ev->row->created_at_us,
                          ev->attempt + 1,
                          ev->row->v[WF_AGGREGATE_SEQ] ? atoll(ev->row->v[WF_AGGREGATE_SEQ]) : 0,
                          ev->row->v[WF_EVENT_VERSION]};
        int built = -1;
        if (ev->row->invalid)
            snprintf(err, sizeof err, "%s", ev->row->invalid);
        else
            built = message_build(&p->source, &f, &p->msgs[count], &ev->route, err, sizeof err);
        if (built == MESSAGE_DROPPED) {
            ev->output = ev->route->output_index; /* none: never offered */
            verdict v = {VERDICT_DROPPED, OBX_OK, 0, err};
            decide(p, ev, &v, now);
            continue;
        }
        if (built < 0) {
            ev->output = 0; /* no route: counted on the first output, as poll mode does */
            ev->attempt++;
            verdict v = {VERDICT_BAD_ROW, OBX_PERMANENT, 0, err};
            decide(p, ev, &v, now);
            continue;
        }
        message_ext_build(&f, &p->exts[count]);
        long out =
            p->hooks ? p->hooks->output_of(p->hooks->arg, ev) : (long)ev->route->output_index;
        if (out < 0) {
            end(p, ev, WINDOW_LEFT_OUT, NULL);
            continue;
        }
        ev->output = (size_t)out;
        if (!p->may_send[ev->output]) {
            hold[held++] = ev;
            continue;
        }
        p->evs[count] = ev;
        p->out_of[count++] = ev->output;
    }
    while (held > 0) /* back at the front, in their order */
        window_unready(p->w, hold[--held]);
    for (size_t out = 0; out < p->dl.outs.count && count > 0; out++)
        publish_output(p, out, count, now);
    arena_reset(&p->scratch);
    return (int)count;
}

int window_publisher_settle(window_publisher *p, long long now)
{
    bury_written(p);
    size_t n;
    const completion *done = completions_take(&p->done, &n);
    for (size_t i = 0; i < n; i++) {
        const completion *d = &done[i];
        window_event *ev = window_find(p->w, d->key);
        if (!ev || ev->state != EV_IN_FLIGHT || (ev->sends & DELIVERY_CHECK_MASK) != d->check)
            continue; /* answered already, or from before a reconnect */
        p->in_flight--;
        verdict v = {VERDICT_COMPLETED, d->status, d->native_code, d->detail};
        decide(p, ev, &v, now);
    }
    return (int)n;
}

int window_publisher_reload(window_publisher *p)
{
    if (atomic_load(&p->st->gen_number) == p->dl.outs.gen->number)
        return 0;
    if (p->in_flight > 0) /* their completions settle under the generation that sent them */
        return 1;
    if (delivery_switch(&p->dl)) {
        p->source.cfg = p->dl.cfg;
        free(p->may_send);
        p->may_send = calloc(p->dl.outs.count, sizeof *p->may_send);
        outputs_ensure(&p->dl.outs, 0);
    }
    return 0;
}

void window_publisher_tend(window_publisher *p)
{
    outputs_close_broken(&p->dl.outs); /* completes what they held, as aborted */
    outputs_ensure(&p->dl.outs, 0);
    outputs_any_usable(&p->dl.outs);
    outputs_poll(&p->dl.outs, 0);
}

void window_publisher_wait(window_publisher *p, int ms)
{
    if (outputs_poll(&p->dl.outs, ms))
        return;
    completions_wait(&p->done, ms);
}

void window_publisher_abort(window_publisher *p)
{
    outputs_close_all(&p->dl.outs);
    window_publisher_settle(p, 0);
    p->in_flight = 0;
    outputs_ensure(&p->dl.outs, 0);
}

void window_publisher_finish_in_flight(window_publisher *p, long long ms)
{
    long long until = now_ms() + ms;
    while ((p->in_flight > 0 || window_publisher_burying(p) > 0) && now_ms() < until) {
        counters_beat();
        window_publisher_wait(p, 20);
        window_publisher_settle(p, now_ms() + 3600000); /* no retry now */
    }
    if (p->in_flight > 0) {
        log_warn("%ld events still in flight at the deadline: they are read again", p->in_flight);
        window_publisher_abort(p);
    }
}

long window_publisher_burying(window_publisher *p)
{
    if (p->hooks)
        return 0;
    return window_side_pending(&p->side);
}

void window_publisher_new_epoch(window_publisher *p)
{
    p->epoch++;
}
