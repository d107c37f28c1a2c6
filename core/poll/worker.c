#include "poll/worker.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "deliver/flight.h"
#include "host/outputs.h"
#include "poll/beside.h"
#include "poll/claimer.h"
#include "poll/idle_wait.h"
#include "poll/lane.h"
#include "poll/session.h"
#include "telemetry/counters.h" /* metrics: call sites marked "counters:" */

/*
 * A worker pipelines its batches over two lanes (lane.h), each with its own
 * session: while one lane's batch waits for acknowledgements, the other
 * claims and publishes the next. Lane 0 does all the work of an idle or
 * lightly loaded relay; lane 1 connects when it is first worth it (a backlog:
 * a full batch).
 */
struct worker {
    relay_state *st;
    int index;
    char scope[32];
    delivery dl; /* publishes and settles for both lanes; one instance per output */
    flights flights;
    lane_shared sh;
    lane lanes[FLIGHT_LANES];
    int beside_empty;  /* a claim beside a busy lane found nothing: not again before a record */
    int beside_wanted; /* claims beside were worth it: keep the lanes connected */
    int answering;     /* a batch got all its answers since the driver started or was aborted */
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

/* The busy lane claimed first (oldest), or last; NULL when none is busy. */
static lane *busy_lane(worker *w, int newest)
{
    lane *found = NULL;
    for (int k = 0; k < FLIGHT_LANES; k++) {
        lane *l = &w->lanes[k];
        if (l->busy && (!found || (newest ? l->claimed_at >= found->claimed_at
                                          : l->claimed_at < found->claimed_at)))
            found = l;
    }
    return found;
}

/* A free lane, lane 0 first (lane 1's session is made only when used). */
static lane *idle_lane(worker *w)
{
    for (int k = 0; k < FLIGHT_LANES; k++)
        if (!w->lanes[k].busy)
            return &w->lanes[k];
    return NULL;
}

/* Keeps every busy lane's transaction alive while another lane's statement
 * waits for its result (session.h's while_waiting). */
static void keep_leases(void *arg)
{
    worker *w = arg;
    counters_beat(); /* counters: liveness */
    for (int k = 0; k < FLIGHT_LANES; k++)
        lane_renew(&w->lanes[k]);
}

/* ---- starting a batch ---- */

/* live reload: with no lane in flight, the newest config generation (outputs.c) */
static void switch_generation(worker *w)
{
    if (!delivery_switch(&w->dl))
        return;
    w->sh.cfg = w->dl.cfg;
    w->sh.run_length = w->dl.outs.gen->run_length;
    claimer_configure(&w->sh.claimer, w->sh.cfg, w->sh.run_length);
    for (int k = 0; k < FLIGHT_LANES; k++)
        lane_use_config(&w->lanes[k], w->sh.cfg);
}

static int generation_pending(const worker *w)
{
    return atomic_load(&w->st->gen_number) != w->dl.outs.gen->number;
}

enum { STARTED, NOTHING, FAILED, PAUSED };

/* Reads the NOTIFYs sent to the idle lanes but `except`. Every lane LISTENs
 * (any may wait idle); a claim sees every row committed so far, so what they
 * say is not news. Read while paused too: a session nobody reads leaves its
 * backend blocked writing them and holds back the server's notification
 * queue, whose end, when full, fails the application's inserts. */
static void drain_notifications(worker *w, const lane *except)
{
    for (int k = 0; k < FLIGHT_LANES; k++)
        if (!w->lanes[k].busy && &w->lanes[k] != except)
            session_notified(&w->lanes[k].db);
}

/* Claims and publishes a batch on l. Beside a busy lane, l's session must
 * be connected already: connecting prepares statements, which can wait for
 * a table lock while the busy lane's transaction would idle past the lease. */
static int start(worker *w, lane *l, int beside)
{
    if (beside ? !l->db.conn : session_connect(&l->db, LLONG_MAX, 1) < 0)
        return FAILED;
    if (outputs_ensure(&w->dl.outs, 0) != 0)
        return FAILED;
    if (!outputs_any_usable(&w->dl.outs)) { /* every output paused: claim nothing */
        drain_notifications(w, NULL);
        return PAUSED;
    }
    drain_notifications(w, l);
    int n = lane_start(l);
    if (n > 0 && w->lanes[0].db.listening) /* busy: it claims again without being told */
        session_listen(&w->lanes[0].db, 0);
    return n < 0 ? FAILED : n == 0 ? NOTHING : STARTED;
}

/* Connects the lanes that are wanted and not connected; only with no lane
 * in flight (see start). */
static void connect_lanes(worker *w)
{
    for (int k = 1; k < FLIGHT_LANES && w->beside_wanted; k++)
        if (!w->lanes[k].db.conn && session_connect(&w->lanes[k].db, now_ms() + 1, 1) < 0)
            return;
}

/* Is a claim beside the busy lane worth it now (beside.h)? */
static int worth_beside(worker *w)
{
    lane *newest = busy_lane(w, 1);
    beside_view v = {
        .stopping = stopping(w),
        .generation_pending = generation_pending(w),
        .found_empty = w->beside_empty,
        .busy_count = newest->b.count,
        .batch_size = w->sh.cfg->batch_size,
        .answering = w->answering,
        .busy_answered = flight_answered(newest->flight),
        .busy_left = flight_left(newest->flight),
    };
    if (!beside_worth(&v))
        return 0;
    w->beside_wanted = 1;
    return 1;
}

/* ---- waiting for completions ---- */

/* An idle lane that could claim beside the busy ones. */
static lane *beside_lane(worker *w)
{
    lane *l = idle_lane(w);
    return l && l->db.conn && !stopping(w) && !generation_pending(w) ? l : NULL;
}

/* Gives back the batches that have awaited acknowledgements past
 * relay.max_transaction_ms: what was acknowledged is recorded, the rest goes
 * back with no attempt counted (the output's outage, not the events'), and
 * the transaction ends. A hung or throttling broker holds no transaction,
 * and so no xmin horizon, for longer than the bound. */
static void give_back_old(worker *w, long long now)
{
    const int bound = w->sh.cfg->max_transaction_ms;
    char reason[96];
    snprintf(reason, sizeof reason, "no acknowledgement within %d ms (relay.max_transaction_ms)",
             bound);
    for (int k = 0; k < FLIGHT_LANES; k++) {
        lane *l = &w->lanes[k];
        if (!l->busy || now - l->claimed_at <= bound)
            continue;
        int n = flight_give_back(l->flight, reason);
        if (n > 0)
            log_scoped(OBX_LOG_WARN, w->scope,
                       "%d of %d messages unacknowledged after %d ms: the batch is recorded and "
                       "they go back with no attempt counted; their output waits until its "
                       "driver has answered them",
                       n, l->b.count, bound);
    }
}

/* Waits until a busy lane has every completion, renewing the busy lanes'
 * leases; returns early when a claim beside is worth it. A stop's deadline
 * ends every lane's wait; relay.max_transaction_ms a lane's. */
static void await_lanes(worker *w)
{
    const relay_config *cfg = w->sh.cfg;
    for (;;) {
        counters_beat(); /* counters: liveness */
        int left = 0, done = 0;
        for (int k = 0; k < FLIGHT_LANES; k++) {
            if (!w->lanes[k].busy)
                continue;
            int lane_left = flight_left(w->lanes[k].flight);
            left += lane_left;
            done |= lane_left == 0;
        }
        if (done) {
            w->answering = 1; /* answered, not aborted: those return below */
            return;
        }
        long long now = now_ms();
        if (stopping(w) && now >= atomic_load(&w->st->stop_at_ms) + cfg->shutdown_timeout_ms) {
            log_scoped(OBX_LOG_WARN, w->scope,
                       "shutdown deadline: %d messages still in flight are released", left);
            flights_abort(&w->flights, 1);
            w->answering = 0;
            return;
        }
        if (now - busy_lane(w, 0)->claimed_at > cfg->max_transaction_ms) {
            give_back_old(w, now);
            w->answering = 0;
            return;
        }
        outputs_close_broken(&w->dl.outs); /* a broken instance owes what only close gives */
        keep_leases(w);
        lane *beside = beside_lane(w);
        if (beside && worth_beside(w))
            return;
        /* a first answer that makes a claim beside worth it is noticed
         * within a slice */
        int soon = beside && !w->beside_empty && busy_lane(w, 1)->b.count == cfg->batch_size;
        int slice = soon ? 5 : 20;
        if (!outputs_poll(&w->dl.outs, slice))
            flights_wait(&w->flights, slice);
    }
}

/* Records every lane whose batch has nothing due, oldest first. */
static void finish_done(worker *w)
{
    for (;;) {
        lane *next = NULL;
        for (int k = 0; k < FLIGHT_LANES; k++) {
            lane *l = &w->lanes[k];
            if (l->busy && flight_left(l->flight) == 0 &&
                (!next || l->claimed_at < next->claimed_at))
                next = l;
        }
        if (!next)
            return;
        lane_finish(next);
        w->beside_empty = 0;
    }
}

/* ---- idle ---- */

static int nothing_pending(worker *w)
{
    PGresult *res =
        session_run(&w->lanes[0].db, SESSION_OTHER, "pending", 0, NULL, PGRES_TUPLES_OK);
    if (!res)
        return 0;
    int none = strcmp(PQgetvalue(res, 0, 0), "f") == 0;
    PQclear(res);
    return none;
}

/* ---- the loop ---- */

/* One step: returns 0 after progress, 1 when idle, -1 after a failure. */
static int one_step(worker *w)
{
    if (!busy_lane(w, 0)) {
        if (stopping(w))
            return 0;
        switch_generation(w);
        connect_lanes(w);
        int rc = start(w, &w->lanes[0], 0);
        if (rc == PAUSED) {
            outputs_poll(&w->dl.outs, 0);
            nap(w, outputs_wait_ms(&w->dl.outs) ? outputs_wait_ms(&w->dl.outs) : 100);
        }
        return rc == STARTED || rc == PAUSED ? 0 : rc == NOTHING ? 1 : -1;
    }
    lane *idle = idle_lane(w);
    if (idle && worth_beside(w) && start(w, idle, 1) != STARTED)
        w->beside_empty = 1; /* until the next batch recorded */
    int done = 0;
    for (int k = 0; k < FLIGHT_LANES; k++)
        done |= w->lanes[k].busy && flight_left(w->lanes[k].flight) == 0;
    if (!done)
        await_lanes(w);
    else
        finish_done(w);
    return 0;
}

void *worker_main(void *arg)
{
    worker *w = arg;
    counters_thread_register(w->st->metrics, w->index); /* counters: liveness */
    if (outputs_ensure(&w->dl.outs, 1) < 0) {
        state_fail(w->st, "a worker's outputs could not start (the log says why)");
        state_request_stop(w->st, now_ms());
        return NULL;
    }
    while (!stopping(w) || busy_lane(w, 0)) {
        counters_beat(); /* counters: liveness */
        int rc = one_step(w);
        lane *oldest = busy_lane(w, 0);
        counters_transaction_since(oldest ? oldest->claimed_at : 0); /* counters */
        if (rc < 0) {
            nap(w, 100);
        } else if (rc == 1) {
            if (w->st->drain && nothing_pending(w)) {
                log_scoped(OBX_LOG_INFO, w->scope, "drained: nothing pending or in flight");
                state_request_stop(w->st, now_ms());
                break;
            }
            /* one more claim once listening: a commit just before the
             * LISTEN was not heard */
            if (!w->lanes[0].db.listening && session_listen(&w->lanes[0].db, 1) == 0)
                continue;
            idle_wait(&w->lanes[0].db, &w->dl.outs, w->sh.cfg->poll_interval_ms);
        }
    }
    outputs_close_all(&w->dl.outs);
    for (int k = 0; k < FLIGHT_LANES; k++)
        session_disconnect(&w->lanes[k].db);
    return NULL;
}

void worker_cancel(worker *w, int claims_only)
{
    for (int k = 0; k < FLIGHT_LANES; k++)
        session_cancel(&w->lanes[k].db, claims_only ? SESSION_CLAIM : SESSION_OTHER);
}

worker *worker_new(relay_state *st, int index, const char *payload_type)
{
    worker *w = calloc(1, sizeof *w);
    w->st = st;
    w->index = index;
    snprintf(w->scope, sizeof w->scope, "worker %d", index);
    delivery_init(&w->dl, st, index, flight_on_complete, &w->flights);
    flights_init(&w->flights, st->cfg->batch_size, &w->dl, w->scope);
    w->sh = (lane_shared){
        .st = st,
        .cfg = st->cfg,
        .dl = &w->dl,
        .run_length = w->dl.outs.gen->run_length,
        .scope = w->scope,
    };
    claimer_configure(&w->sh.claimer, w->sh.cfg, w->sh.run_length);
    claimer_share_place(&w->sh.claimer, &st->claim_place);
    for (int k = 0; k < FLIGHT_LANES; k++) {
        lane_init(&w->lanes[k], &w->sh, &w->flights.lane[k], payload_type);
        w->lanes[k].db.while_waiting = keep_leases;
        w->lanes[k].db.while_waiting_arg = w;
    }
    return w;
}

void worker_free(worker *w)
{
    if (!w)
        return;
    delivery_free(&w->dl);
    for (int k = 0; k < FLIGHT_LANES; k++)
        lane_free(&w->lanes[k]);
    claimer_free(&w->sh.claimer);
    flights_free(&w->flights);
    free(w);
}
