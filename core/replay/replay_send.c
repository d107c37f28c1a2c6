#include "replay/replay_send.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "deliver/delivery.h"
#include "deliver/completions.h"
#include "replay/replay_window.h"

#define ROUND 500
#define PAGE 1000
#define SAVE_MS 100 /* the progress row, at most this often */

typedef struct replayer {
    relay_state *st;
    const replay_opts *o;
    replay_progress *p;
    delivery dl;
    arena scratch;
    message_source source;
    replay_window *w;
    long in_flight;
    long long skipped, acked_now; /* this run: left out by --route; acknowledged */
    double tokens;                /* the rate limit's bucket */
    long long refilled_ms;
    int *may_send; /* per output, once per round */

    completions done; /* completions, from any thread */

    obx_message msgs[ROUND], batch[ROUND];
    obx_message_ext exts[ROUND], batch_ext[ROUND]; /* host->message_ext, parallel to them */
    replay_event *evs[ROUND], *batch_evs[ROUND];
    obx_status accept[ROUND];
    char refused[ROUND][DELIVERY_DETAIL_MAX];
    replay_row rows[PAGE]; /* a page read */
} replayer;

/* The retry policy and the output's health decide, as for `run`; given up
 * means not replayed (logged), the rows untouched. */
static void decide(replayer *r, replay_event *ev, const verdict *v, long long now)
{
    settle_item it = {.output = ev->output,
                      .v = *v,
                      .attempt = ev->attempt,
                      .route = v->kind == VERDICT_BAD_ROW ? NULL : ev->route,
                      .offered = v->kind != VERDICT_BAD_ROW,
                      .created_at_us = ev->row.created_at_us,
                      .since_ms = ev->sent_ms};
    decision d;
    delivery_settle(&r->dl, &it, 1, &d);
    switch (d.outcome) {
    case OUTCOME_PUBLISHED:
        ev->state = REV_DONE;
        ev->result = REV_ACKED;
        r->acked_now++;
        break;
    case OUTCOME_RETRY:
        ev->state = REV_QUEUED;
        ev->due_ms = now + d.delay_ms;
        break;
    case OUTCOME_DEAD:
        log_warn("replay: event %s (id %lld) not replayed: %s",
                 ev->row.v[RF_EVENT_ID] ? ev->row.v[RF_EVENT_ID] : "NULL", ev->row.id, d.error);
        ev->state = REV_DONE;
        ev->result = REV_FAILED;
        break;
    default: /* the output failed, not the event: no attempt counted */
        ev->attempt--;
        ev->state = REV_QUEUED;
        ev->due_ms = now + (d.delay_ms > 0 ? d.delay_ms : 100);
        break;
    }
}

static void settle(replayer *r, long long now)
{
    size_t n;
    const completion *done = completions_take(&r->done, &n);
    for (size_t i = 0; i < n; i++) {
        const completion *d = &done[i];
        replay_event *ev = replay_window_find(r->w, d->key);
        if (!ev || ev->state != REV_FLIGHT || (ev->sends & DELIVERY_CHECK_MASK) != d->check)
            continue; /* answered already */
        r->in_flight--;
        verdict v = {VERDICT_COMPLETED, d->status, d->native_code, d->detail};
        decide(r, ev, &v, now);
    }
}

/* Done events leave the window in id order: the progress moves past them. */
static void advance(replayer *r)
{
    replay_event *ev;
    while ((ev = replay_window_pop_done(r->w))) {
        r->p->done_through = ev->row.id;
        r->p->replayed += ev->result == REV_ACKED;
        r->p->failed += ev->result == REV_FAILED;
        replay_row_free(&ev->row);
    }
}

/* Reads a page when the window has room for one. Returns 1 once all is read. */
static int fill(replayer *r, PGconn *conn, const replay_filter *f, long long *after, char *err,
                size_t err_size)
{
    if (REPLAY_WINDOW - r->w->count < PAGE)
        return 0;
    int n = replay_read_page(conn, r->st->cfg, f, *after, PAGE, r->rows, err, err_size);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        *after = r->rows[i].id;
        replay_window_push(r->w, &r->rows[i]);
    }
    return n < PAGE;
}

/* Builds ev's message into r->msgs[n]; 0 when it is to be sent. */
static int build(replayer *r, replay_event *ev, size_t n, long long now)
{
    const replay_row *row = &ev->row;
    event_fields f = {row->v[RF_EVENT_ID],
                      row->v[RF_AGGREGATE_TYPE],
                      row->v[RF_AGGREGATE_ID],
                      row->v[RF_EVENT_TYPE],
                      row->v[RF_PAYLOAD],
                      row->v[RF_HEADERS],
                      row->v[RF_DESTINATION],
                      row->payload_len,
                      row->created_at_us,
                      ev->attempt + 1,
                      row->v[RF_AGGREGATE_SEQ] ? atoll(row->v[RF_AGGREGATE_SEQ]) : 0,
                      row->v[RF_EVENT_VERSION]};
    char err[OUTCOME_ERROR_MAX];
    int built = message_build(&r->source, &f, &r->msgs[n], &ev->route, err, sizeof err);
    if (built < 0) {
        ev->output = 0;
        ev->attempt++;
        verdict v = {VERDICT_BAD_ROW, OBX_PERMANENT, 0, err};
        decide(r, ev, &v, now);
        return -1;
    }
    message_ext_build(&f, &r->exts[n]);
    size_t route = (size_t)(ev->route - r->dl.cfg->routes);
    if (built == MESSAGE_DROPPED || (r->o->routes && !r->o->routes[route])) {
        ev->state = REV_DONE; /* dropped, or not this replay's route */
        ev->result = REV_SKIPPED;
        r->skipped++;
        return -1;
    }
    ev->output = r->o->to_output >= 0 ? (size_t)r->o->to_output : ev->route->output_index;
    return r->may_send[ev->output] ? 0 : -1;
}

static void publish_output(replayer *r, size_t out, size_t count, long long now)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        replay_event *ev = r->evs[i];
        if (ev->output != out)
            continue;
        ev->sends++;
        ev->attempt++;
        ev->state = REV_FLIGHT;
        ev->sent_ms = now;
        r->msgs[i].token = delivery_token(ev->seq, ev->sends);
        r->msgs[i].attempt = ev->attempt;
        r->batch[n] = r->msgs[i];
        r->batch_ext[n] = r->exts[i];
        r->batch_evs[n++] = ev;
    }
    if (n == 0)
        return;
    r->in_flight += (long)n;
    if (delivery_publish(&r->dl, out, r->batch, r->batch_ext, n, r->accept, r->refused) == n)
        return;
    for (size_t k = 0; k < n; k++)
        if (r->accept[k] != OBX_OK) {
            r->in_flight--;
            verdict v = {VERDICT_REFUSED, r->accept[k], 0, r->refused[k]};
            decide(r, r->batch_evs[k], &v, now);
        }
}

/* Sends what may go now: per aggregate its first event not done, when due,
 * within the rate. Returns how many were offered. */
static int send_round(replayer *r, long long now)
{
    double burst = r->o->rate / 20 > 1 ? r->o->rate / 20 : 1; /* 50 ms worth */
    r->tokens += r->o->rate * (double)(now - r->refilled_ms) / 1000.0;
    if (r->tokens > burst)
        r->tokens = burst;
    r->refilled_ms = now;
    int any = 0;
    for (size_t i = 0; i < r->dl.outs.count; i++)
        any |= r->may_send[i] = outputs_may_send(&r->dl.outs, i);
    if (!any)
        return 0; /* every output paused: nothing built, nothing attempted */
    replay_window_round(r->w);
    size_t count = 0;
    for (size_t i = 0; i < r->w->count && count < ROUND && r->tokens >= 1; i++) {
        replay_event *ev = replay_window_find(r->w, r->w->head + i);
        if (ev->state == REV_DONE || replay_window_held(r->w, ev))
            continue;
        if (ev->state != REV_QUEUED || ev->due_ms > now || build(r, ev, count, now) < 0)
            continue;
        r->evs[count++] = ev;
        r->tokens -= 1;
    }
    for (size_t out = 0; out < r->dl.outs.count && count > 0; out++)
        publish_output(r, out, count, now);
    arena_reset(&r->scratch);
    return (int)count;
}

static void wait_some(replayer *r, int ms)
{
    if (outputs_poll(&r->dl.outs, ms))
        return;
    completions_wait(&r->done, ms);
}

/* The line on stderr every second: done of total, rate, ETA. */
static void report(replayer *r, long long base, long long *last_done, long long elapsed_ms)
{
    long long done = r->p->replayed + r->p->failed + r->skipped - base;
    double rate = (double)(done - *last_done) * 1000.0 / (double)(elapsed_ms ? elapsed_ms : 1);
    long long left = r->o->total - done;
    char eta[32] = "-";
    if (rate > 0 && left > 0)
        snprintf(eta, sizeof eta, "%.0f s", (double)left / rate);
    fprintf(
        stderr, "replay %s: %lld of %lld events (%.1f%%), %.0f events/s, %ld in flight, ETA %s\n",
        r->p->name, done, r->o->total,
        r->o->total ? 100.0 * (double)done / (double)r->o->total : 100.0, rate, r->in_flight, eta);
    *last_done = done;
}

static void save(replayer *r, PGconn *conn)
{
    char err[1024];
    if (replay_progress_save(conn, r->st->cfg, r->p, err, sizeof err) < 0)
        log_warn("replay %s: cannot save the progress: %s", r->p->name, err);
}

/* Stopped: what is in flight may still be acknowledged (up to the shutdown
 * timeout); nothing new is sent. The rest is sent by the next run. */
static void finish_in_flight(replayer *r)
{
    long long deadline = now_ms() + r->st->cfg->shutdown_timeout_ms;
    while (r->in_flight > 0 && now_ms() < deadline) {
        wait_some(r, 20);
        settle(r, now_ms());
    }
    outputs_close_all(&r->dl.outs); /* the rest completes as aborted */
    settle(r, now_ms());
    advance(r);
}

static int run(replayer *r, PGconn *conn, const replay_filter *f)
{
    long long after = r->p->done_through, base = r->p->replayed + r->p->failed, last_done = 0;
    long long last_report = now_ms(), last_save = last_report, saved_through = after;
    int read_all = 0, rc = 0;
    char err[1024];
    r->refilled_ms = now_ms();
    for (;;) {
        long long now = now_ms();
        settle(r, now);
        advance(r);
        if (*r->o->stop || (read_all && r->w->count == 0))
            break;
        if (!read_all && (read_all = fill(r, conn, f, &after, err, sizeof err)) < 0) {
            log_error("replay %s: %s", r->p->name, err);
            rc = 1;
            break;
        }
        outputs_close_broken(&r->dl.outs);
        outputs_ensure(&r->dl.outs, 0);
        outputs_any_usable(&r->dl.outs);
        int sent = send_round(r, now);
        if (now - last_report >= 1000) {
            report(r, base, &last_done, now - last_report);
            last_report = now;
        }
        /* a crash sends again what was acknowledged since the last save */
        if (now - last_save >= SAVE_MS && r->p->done_through != saved_through) {
            save(r, conn);
            saved_through = r->p->done_through;
            last_save = now;
        }
        if (sent == 0 || r->tokens < 1)
            wait_some(r, r->in_flight > 0 ? 5 : 20);
    }
    finish_in_flight(r);
    report(r, base, &last_done, now_ms() - last_report);
    r->p->finished = rc == 0 && !*r->o->stop && r->w->count == 0;
    char err2[1024];
    if (replay_progress_save(conn, r->st->cfg, r->p, err2, sizeof err2) < 0) {
        log_error("replay %s: cannot save the progress: %s", r->p->name, err2);
        rc = 1;
    }
    return rc == 0 && r->p->finished ? 0 : 1;
}

int replay_send(relay_state *st, PGconn *conn, const replay_filter *f, replay_progress *p,
                const replay_opts *o, long long *skipped)
{
    replayer *r = calloc(1, sizeof *r);
    r->st = st;
    r->o = o;
    r->p = p;
    r->w = calloc(1, sizeof *r->w);
    r->source = (message_source){st->cfg, st->payload, &r->scratch};
    completions_init(&r->done);
    delivery_init(&r->dl, st, 0, completions_put, &r->done);
    snprintf(r->dl.outs.scope, sizeof r->dl.outs.scope, "replay");
    r->dl.outs.only = o->to_output; /* -1: the outputs of the routes */
    r->may_send = calloc(r->dl.outs.count, sizeof *r->may_send);
    int rc = outputs_ensure(&r->dl.outs, 1) < 0 ? 1 : run(r, conn, f);
    *skipped = r->skipped;
    delivery_free(&r->dl);
    replay_event *ev;
    for (size_t i = 0; i < r->w->count; i++)
        if ((ev = replay_window_find(r->w, r->w->head + i)))
            replay_row_free(&ev->row);
    arena_free(&r->scratch);
    completions_free(&r->done);
    free(r->may_send);
    free(r->w);
    free(r);
    return rc;
}
