#include "replay/replay_send.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "window/window.h"
#include "window/window_publish.h"

#define WINDOW_MAX 4096 /* events read and not yet done */
#define PAGE 1000
#define SAVE_MS 100 /* the progress row, at most this often */

/* The window every ordered reader feeds, one pseudo-transaction per event
 * (its position: the event's id), so that what the window confirms is the
 * progress: done_through. The window's publisher sends, without dead letters. */
typedef struct replayer {
    relay_state *st;
    const replay_opts *o;
    replay_progress *p;
    window w;
    window_publisher pub;
    window_hooks hooks;
    size_t round_max;  /* the publisher's round */
    long long skipped; /* this run: dropped, or left out by --route */
    double tokens;     /* the rate limit's bucket */
    long long refilled_ms;
    long long ids[PAGE]; /* a page read */
    event_row *rows[PAGE];
} replayer;

/* --to OUTPUT, --route N: where a built event goes, or -1 (left out). */
static long output_of(void *arg, const window_event *ev)
{
    replayer *r = arg;
    size_t route = (size_t)(ev->route - r->pub.dl.cfg->routes);
    if (r->o->routes && !r->o->routes[route])
        return -1;
    return r->o->to_output >= 0 ? r->o->to_output : (long)ev->route->output_index;
}

/* Given up means not replayed (logged), the rows untouched. */
static void ended(void *arg, const window_event *ev, const char *error)
{
    replayer *r = arg;
    if (ev->ended == WINDOW_DROPPED || ev->ended == WINDOW_LEFT_OUT)
        r->skipped++;
    if (ev->ended == WINDOW_GIVEN_UP)
        log_warn("replay: event %s (id %lld) not replayed: %s",
                 ev->row->v[WF_EVENT_ID] ? ev->row->v[WF_EVENT_ID] : "NULL",
                 (long long)window_event_commit_lsn(ev), error);
}

/* Done events leave the window in id order: the progress moves past them. */
static void advance(replayer *r)
{
    window_event *ev;
    for (uint64_t s = r->w.base_seq; (ev = window_find(&r->w, s)) && ev->state == EV_DONE; s++) {
        r->p->done_through = (long long)window_event_commit_lsn(ev);
        r->p->replayed += ev->ended == WINDOW_ACKED;
        r->p->failed += ev->ended == WINDOW_GIVEN_UP;
    }
    window_confirm(&r->w);
}

/* Reads a page when the window has room for one. Returns 1 once all is read. */
static int fill(replayer *r, PGconn *conn, const replay_filter *f, long long *after, char *err,
                size_t err_size)
{
    if (WINDOW_MAX - r->w.ring_len < PAGE)
        return 0;
    int n = replay_read_page(conn, r->st->cfg, f, *after, PAGE, r->ids, r->rows, err, err_size);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        *after = r->ids[i];
        window_begin(&r->w, r->rows[i]->created_at_us);
        window_add(&r->w, r->rows[i]);
        window_commit(&r->w, (uint64_t)r->ids[i]);
    }
    return n < PAGE;
}

/* Sends what may go now, within the rate. Returns how many were offered. */
static int send_round(replayer *r, long long now)
{
    double burst = r->o->rate / 20 > 1 ? r->o->rate / 20 : 1; /* 50 ms worth */
    r->tokens += r->o->rate * (double)(now - r->refilled_ms) / 1000.0;
    if (r->tokens > burst)
        r->tokens = burst;
    r->refilled_ms = now;
    r->pub.round_cap = r->tokens >= (double)r->round_max ? r->round_max : (size_t)r->tokens;
    int sent = window_publisher_send(&r->pub, now);
    r->tokens -= sent;
    return sent;
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
    fprintf(stderr,
            "replay %s: %lld of %lld events (%.1f%%), %.0f events/s, %ld in flight, ETA %s\n",
            r->p->name, done, r->o->total,
            r->o->total ? 100.0 * (double)done / (double)r->o->total : 100.0, rate,
            r->pub.in_flight, eta);
    *last_done = done;
}

static void save(replayer *r, PGconn *conn)
{
    char err[1024];
    if (replay_progress_save(conn, r->st->cfg, r->p, err, sizeof err) < 0)
        log_warn("replay %s: cannot save the progress: %s", r->p->name, err);
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
        window_publisher_settle(&r->pub, now);
        advance(r);
        if (*r->o->stop || (read_all && window_empty(&r->w)))
            break;
        if (!read_all && (read_all = fill(r, conn, f, &after, err, sizeof err)) < 0) {
            log_error("replay %s: %s", r->p->name, err);
            rc = 1;
            break;
        }
        window_publisher_tend(&r->pub);
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
            window_publisher_wait(&r->pub, r->pub.in_flight > 0 ? 5 : 20);
    }
    /* stopped: what is in flight may still be acknowledged (up to the
     * shutdown timeout); nothing new is sent. The rest is the next run's. */
    window_publisher_finish_in_flight(&r->pub, r->st->cfg->shutdown_timeout_ms);
    advance(r);
    report(r, base, &last_done, now_ms() - last_report);
    r->p->finished = rc == 0 && !*r->o->stop && window_empty(&r->w);
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
    window_init(&r->w, 1); /* per aggregate one at a time, whatever relay.ordering says */
    /* -1: the outputs of the routes */
    r->hooks = (window_hooks){"replay", o->to_output, output_of, ended, r};
    int rc = window_publisher_init_hooked(&r->pub, st, &r->w, &r->hooks) < 0 ? 1 : 0;
    r->round_max = r->pub.round_cap;
    if (rc == 0)
        rc = run(r, conn, f);
    *skipped = r->skipped;
    window_publisher_free(&r->pub);
    window_free(&r->w);
    free(r);
    return rc;
}
