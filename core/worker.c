#include "worker.h"

#include <errno.h>
#include <stdatomic.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "host.h"
#include "log.h"
#include "pgarray.h"
#include "queries.h"

/* Where a message of the current batch stands. ABORTED: closed in flight at
 * shutdown; REFUSED: never accepted by the driver. Neither counts an attempt. */
typedef enum { SLOT_AWAITING, SLOT_DONE, SLOT_ABORTED, SLOT_REFUSED } slot_state;

typedef struct slot {
    slot_state state;
    obx_status status;
    int native_code;
    size_t output;
    char detail[256];
} slot;

/* A driver instance of one output, owned by this worker. */
typedef struct output_instance {
    host_ctx host;
    obx_instance *inst;
    atomic_int broken;  /* FATAL seen (any thread): close now, re-create before the next claim */
    long long retry_at; /* when to try create again */
    int backoff_ms;
} output_instance;

struct worker {
    engine *eng;
    const relay_config *cfg;
    int index;
    char owner[192];
    PGconn *conn;
    output_instance *outs;
    unsigned rand_state;

    /* the current batch */
    PGresult *claim;
    int count;
    obx_message *msgs;
    slot *slots;
    obx_message *scratch; /* one output's messages, contiguous for publish_batch */
    obx_status *accept;
    int *scratch_index;
    arena arena;
    long long claimed_at;

    /* completions arrive from any thread */
    pthread_mutex_t lock;
    pthread_cond_t done;
    uint32_t seq;
    int awaiting;
};

static void worker_log(worker *w, obx_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void worker_log(worker *w, obx_log_level level, const char *fmt, ...)
{
    char scope[32];
    snprintf(scope, sizeof scope, "worker %d", w->index);
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, scope, fmt, ap);
    va_end(ap);
}

static int stopping(const worker *w)
{
    return atomic_load(&w->eng->stop) != 0;
}

/* Sleeps up to ms, waking early when a stop is requested. */
static void nap(worker *w, int ms)
{
    for (int slept = 0; slept < ms && !stopping(w); slept += 50)
        usleep(1000 * (ms - slept < 50 ? ms - slept : 50));
}

/* ---- completions (any thread) ---- */

static void on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail)
{
    worker *w = arg;
    uint32_t seq = (uint32_t)(token >> 32), index = (uint32_t)token;
    pthread_mutex_lock(&w->lock);
    if (seq != w->seq || index >= (uint32_t)w->count || w->slots[index].state != SLOT_AWAITING) {
        pthread_mutex_unlock(&w->lock);
        worker_log(w, OBX_LOG_WARN,
                   "driver completed an unknown or finished message (token %llx): ignored",
                   (unsigned long long)token);
        return;
    }
    slot *s = &w->slots[index];
    s->state = SLOT_DONE;
    s->status = status;
    s->native_code = native_code;
    snprintf(s->detail, sizeof s->detail, "%s", detail ? detail : "");
    if (status == OBX_FATAL)
        atomic_store(&w->outs[s->output].broken, 1);
    if (--w->awaiting == 0 || status == OBX_FATAL)
        pthread_cond_signal(&w->done);
    pthread_mutex_unlock(&w->lock);
}

/* ---- database ---- */

static void disconnect(worker *w)
{
    PQfinish(w->conn);
    w->conn = NULL;
}

/* Connects, prepares and listens; retries with backoff until the deadline
 * (ms, monotonic) passes, or, with honour_stop, until a stop is requested. */
static int ensure_connected(worker *w, long long deadline, int honour_stop)
{
    if (w->conn && !db_lost(w->conn))
        return 0;
    if (w->conn) {
        worker_log(w, OBX_LOG_WARN, "database connection lost; reconnecting");
        disconnect(w);
    }
    int backoff = 100;
    char err[1024];
    char channel[300], listen[400];
    snprintf(channel, sizeof channel, "%s.%s", w->cfg->schema, w->cfg->table);
    while (now_ms() < deadline && !(honour_stop && stopping(w))) {
        w->conn = db_connect(w->cfg, "outbox-relay", err, sizeof err);
        if (w->conn) {
            char *quoted = PQescapeIdentifier(w->conn, channel, strlen(channel));
            snprintf(listen, sizeof listen, "LISTEN %s", quoted);
            PQfreemem(quoted);
            /* no statement may outlive the lease it works under, nor a killed relay */
            char timeout[64];
            snprintf(timeout, sizeof timeout, "SET statement_timeout = %d", w->cfg->lease_ms);
            if (db_exec(w->conn, timeout, err, sizeof err) == 0 &&
                queries_prepare(w->conn, w->cfg, err, sizeof err) == 0 &&
                db_exec(w->conn, listen, err, sizeof err) == 0)
                return 0;
            disconnect(w);
        }
        worker_log(w, OBX_LOG_WARN, "%s; retrying in %d ms", err, backoff);
        usleep(1000 * backoff);
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
    return -1;
}

/* Runs a prepared statement; on a lost connection reconnects and reports -1. */
static PGresult *run(worker *w, const char *stmt, int nparams, const char *const *params,
                     ExecStatusType want)
{
    PGresult *res = PQexecPrepared(w->conn, stmt, nparams, params, NULL, NULL, 0);
    if (PQresultStatus(res) == want)
        return res;
    char err[1024];
    db_error(w->conn, res, err, sizeof err);
    PQclear(res);
    worker_log(w, OBX_LOG_WARN, "%s failed: %s", stmt, err);
    if (db_lost(w->conn)) {
        worker_log(w, OBX_LOG_WARN, "database connection lost; reconnecting");
        disconnect(w);
    }
    return NULL;
}

/* ---- driver instances ---- */

static void close_instance(output_instance *o)
{
    if (!o->inst)
        return;
    const obx_driver_def *def = &o->host.driver->def;
    def->close(o->inst); /* completes what is still in flight, as aborted */
    def->destroy(o->inst);
    o->inst = NULL;
}

/* Creates missing instances when due. Returns 0 when all are up. */
static int ensure_instances(worker *w, int first)
{
    int all_up = 1;
    for (size_t i = 0; i < w->cfg->output_count; i++) {
        output_instance *o = &w->outs[i];
        if (o->broken) {
            close_instance(o);
            o->broken = 0;
            o->backoff_ms = o->backoff_ms ? o->backoff_ms * 2 : 200;
            if (o->backoff_ms > 30000)
                o->backoff_ms = 30000;
            o->retry_at = now_ms() + o->backoff_ms;
            worker_log(w, OBX_LOG_WARN, "output %s: driver instance failed; re-creating in %d ms",
                       w->cfg->outputs[i].name, o->backoff_ms);
        }
        if (o->inst)
            continue;
        if (now_ms() < o->retry_at) {
            all_up = 0;
            continue;
        }
        char err[512] = "";
        const loaded_driver *drv = w->eng->drivers[i];
        host_init(&o->host, drv, &w->cfg->outputs[i], on_complete, w);
        o->inst = drv->def.create(&o->host.host, err, sizeof err);
        if (!o->inst) {
            worker_log(w, OBX_LOG_ERROR, "output %s: driver %s: cannot create: %s",
                       w->cfg->outputs[i].name, drv->def.name, err[0] ? err : "no reason given");
            if (first)
                return -1;
            o->broken = 1;
            all_up = 0;
        } else if (!first) {
            worker_log(w, OBX_LOG_INFO, "output %s: driver instance re-created",
                       w->cfg->outputs[i].name);
        }
    }
    return all_up ? 0 : 1;
}

/* ---- one batch ---- */

static int claim(worker *w)
{
    char batch[16], lease[16], window[16];
    snprintf(batch, sizeof batch, "%d", w->cfg->batch_size);
    snprintf(lease, sizeof lease, "%d", w->cfg->lease_ms);
    snprintf(window, sizeof window, "%d", w->cfg->batch_size * 8);
    const char *params[] = {w->owner, batch, lease, window};
    int n = w->cfg->ordering == ORDERING_AGGREGATE ? 4 : 3;
    w->claim = run(w, "claim", n, params, PGRES_TUPLES_OK);
    if (!w->claim)
        return -1;
    w->claimed_at = now_ms();
    w->count = PQntuples(w->claim);
    atomic_fetch_add(&w->eng->claimed, w->count);
    return w->count;
}

static void finish_slot(slot *s, obx_status status, const char *detail)
{
    s->state = SLOT_DONE;
    s->status = status;
    snprintf(s->detail, sizeof s->detail, "%s", detail);
}

/* Hands each output its messages; refused ones are finished at once. */
static void publish(worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->seq++;
    w->awaiting = 0;
    pthread_mutex_unlock(&w->lock);

    for (int i = 0; i < w->count; i++) {
        slot *s = &w->slots[i];
        char err[256];
        memset(s, 0, sizeof *s);
        if (message_build(w->cfg, w->eng->payload, w->claim, i, &w->arena, &w->msgs[i], &s->output,
                          err, sizeof err) < 0) {
            finish_slot(s, OBX_PERMANENT, err);
            continue;
        }
        w->msgs[i].token = ((uint64_t)w->seq << 32) | (uint32_t)i;
        s->state = SLOT_AWAITING;
    }
    for (size_t out = 0; out < w->cfg->output_count; out++) {
        size_t n = 0;
        for (int i = 0; i < w->count; i++)
            if (w->slots[i].state == SLOT_AWAITING && w->slots[i].output == out) {
                w->scratch[n] = w->msgs[i];
                w->scratch_index[n++] = i;
            }
        if (n == 0)
            continue;
        output_instance *o = &w->outs[out];
        pthread_mutex_lock(&w->lock);
        w->awaiting += (int)n; /* completions may arrive inside publish_batch */
        pthread_mutex_unlock(&w->lock);
        for (size_t k = 0; k < n; k++)
            w->accept[k] = OBX_RETRIABLE;
        obx_status rc = o->host.driver->def.publish_batch(o->inst, w->scratch, n, w->accept);
        if (rc == OBX_FATAL)
            o->broken = 1;
        pthread_mutex_lock(&w->lock);
        for (size_t k = 0; k < n; k++) {
            if (w->accept[k] == OBX_OK)
                continue;
            slot *s = &w->slots[w->scratch_index[k]];
            if (s->state == SLOT_AWAITING) {
                finish_slot(s, w->accept[k],
                            rc == OBX_FATAL ? "driver instance failed"
                                            : "refused by the driver at publish");
                if (w->accept[k] != OBX_PERMANENT)
                    s->state = SLOT_REFUSED;
                w->awaiting--;
            }
        }
        pthread_mutex_unlock(&w->lock);
    }
}

static void renew_lease(worker *w)
{
    pgarray ids;
    pgarray_init(&ids);
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->count; i++)
        if (w->slots[i].state == SLOT_AWAITING)
            pgarray_add(&ids, PQgetvalue(w->claim, i, ROW_ID), 0);
    pthread_mutex_unlock(&w->lock);
    char lease[16];
    snprintf(lease, sizeof lease, "%d", w->cfg->lease_ms);
    const char *params[] = {pgarray_text(&ids), w->owner, lease};
    if (w->conn) {
        PGresult *res = run(w, "renew", 3, params, PGRES_COMMAND_OK);
        PQclear(res);
    }
    pgarray_free(&ids);
}

static int any_poll(const worker *w)
{
    for (size_t i = 0; i < w->cfg->output_count; i++)
        if (w->outs[i].inst && w->outs[i].host.driver->def.poll)
            return 1;
    return 0;
}

/* Lets each driver that polls serve its events for up to timeout_ms (0 when
 * idle: heartbeats, reconnects). */
static void poll_drivers(worker *w, int timeout_ms)
{
    for (size_t i = 0; i < w->cfg->output_count; i++)
        if (w->outs[i].inst && w->outs[i].host.driver->def.poll)
            w->outs[i].host.driver->def.poll(w->outs[i].inst, timeout_ms);
}

/* Closes every instance still owing completions: close completes them as
 * aborted. With release, those rows go back without counting an attempt. */
static void abort_in_flight(worker *w, int release)
{
    char *was_awaiting = calloc(w->count ? w->count : 1, 1);
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->count; i++)
        was_awaiting[i] = w->slots[i].state == SLOT_AWAITING;
    pthread_mutex_unlock(&w->lock);
    for (size_t i = 0; i < w->cfg->output_count; i++)
        close_instance(&w->outs[i]);
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->count; i++) {
        slot *s = &w->slots[i];
        if (s->state == SLOT_AWAITING) /* a driver that broke the contract */
            finish_slot(s, OBX_RETRIABLE, "no completion from the driver");
        if (release && was_awaiting[i] && s->status != OBX_OK)
            s->state = SLOT_ABORTED;
    }
    w->awaiting = 0;
    pthread_mutex_unlock(&w->lock);
    free(was_awaiting);
}

/* Waits for every completion, renewing the lease; a stop bounds the wait. */
static void await_completions(worker *w)
{
    long long renewed = w->claimed_at;
    const long long stuck_after = 5LL * w->cfg->lease_ms;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int left = w->awaiting;
        pthread_mutex_unlock(&w->lock);
        if (left == 0)
            break;
        long long now = now_ms();
        if (stopping(w) && now >= atomic_load(&w->eng->stop_at_ms) + w->cfg->shutdown_timeout_ms) {
            worker_log(w, OBX_LOG_WARN,
                       "shutdown deadline: %d messages still in flight are released", left);
            abort_in_flight(w, 1);
            return;
        }
        if (now - w->claimed_at > stuck_after) {
            worker_log(w, OBX_LOG_ERROR,
                       "driver gave no completion for %d messages in %lld ms: re-creating it", left,
                       stuck_after);
            abort_in_flight(w, 0);
            for (size_t i = 0; i < w->cfg->output_count; i++)
                w->outs[i].broken = 1;
            return;
        }
        /* a broken instance may owe completions it will only give at close */
        for (size_t i = 0; i < w->cfg->output_count; i++)
            if (atomic_load(&w->outs[i].broken) && w->outs[i].inst)
                close_instance(&w->outs[i]);
        if (now - renewed > w->cfg->lease_ms / 3) {
            renew_lease(w);
            renewed = now;
        }
        if (any_poll(w)) {
            int slice = 20 / (int)w->cfg->output_count;
            poll_drivers(w, slice ? slice : 1);
        } else {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 20 * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_mutex_lock(&w->lock);
            if (w->awaiting > 0)
                pthread_cond_timedwait(&w->done, &w->lock, &until);
            pthread_mutex_unlock(&w->lock);
        }
    }
}

/* An output that acknowledged something is healthy again. */
static void reset_recreate_backoff(worker *w)
{
    for (int i = 0; i < w->count; i++)
        if (w->slots[i].state == SLOT_DONE && w->slots[i].status == OBX_OK)
            w->outs[w->slots[i].output].backoff_ms = 0;
}

static long long backoff_ms(const worker *w, unsigned attempt, unsigned *rnd)
{
    const relay_config *c = w->cfg;
    double delay =
        c->backoff_initial_ms * pow(c->backoff_multiplier, attempt > 0 ? attempt - 1 : 0);
    if (delay > c->backoff_max_ms)
        delay = c->backoff_max_ms;
    double r = (double)rand_r(rnd) / ((double)RAND_MAX + 1.0);
    return (long long)(delay * (1.0 - c->backoff_jitter * r));
}

static const char *const status_names[] = {"ok", "retriable", "permanent", "fatal"};

/* Turns the batch's slots into one fenced record statement. */
static void record(worker *w)
{
    pgarray ids, outcomes, delays, errors, holds;
    pgarray_init(&ids);
    pgarray_init(&outcomes);
    pgarray_init(&delays);
    pgarray_init(&errors);
    pgarray_init(&holds);
    int published = 0;
    for (int i = 0; i < w->count; i++) {
        const slot *s = &w->slots[i];
        const char *id = PQgetvalue(w->claim, i, ROW_ID);
        unsigned attempt = (unsigned)atoi(PQgetvalue(w->claim, i, ROW_ATTEMPTS)) + 1;
        int outcome;
        long long delay = 0;
        char error[400] = "";
        if (s->state == SLOT_ABORTED) {
            outcome = REC_RELEASE;
        } else if (s->state == SLOT_REFUSED) {
            outcome = REC_DEFER;
            delay = backoff_ms(w, 1, &w->rand_state);
            snprintf(error, sizeof error, "%s", s->detail);
        } else if (s->status == OBX_OK) {
            outcome = REC_PUBLISHED;
        } else if (s->status == OBX_PERMANENT) {
            outcome = REC_DEAD;
            snprintf(error, sizeof error, "%s", s->detail);
        } else if ((int)attempt >= w->cfg->max_attempts) {
            outcome = REC_DEAD;
            snprintf(error, sizeof error, "gave up after %u attempts: %s", attempt, s->detail);
        } else {
            outcome = REC_RETRY;
            delay = backoff_ms(w, attempt, &w->rand_state);
            snprintf(error, sizeof error, "%s: %s", status_names[s->status], s->detail);
        }
        if (s->native_code && outcome != REC_PUBLISHED && outcome != REC_RELEASE) {
            size_t len = strlen(error);
            snprintf(error + len, sizeof error - len, " (code %d)", s->native_code);
        }
        published += outcome == REC_PUBLISHED;
        if (outcome == REC_DEAD)
            worker_log(w, OBX_LOG_WARN, "event %s dead-lettered: %s",
                       PQgetvalue(w->claim, i, ROW_EVENT_ID), error);
        char num[24];
        pgarray_add(&ids, id, 0);
        snprintf(num, sizeof num, "%d", outcome);
        pgarray_add(&outcomes, num, 0);
        snprintf(num, sizeof num, "%lld", delay);
        pgarray_add(&delays, num, 0);
        pgarray_add(&errors, error, 1);
        if (w->cfg->ordering == ORDERING_AGGREGATE &&
            (outcome == REC_RETRY || outcome == REC_DEFER ||
             (outcome == REC_DEAD && w->cfg->on_dead == DEAD_BLOCK)))
            pgarray_add(&holds, id, 0);
    }
    const char *delete = w->cfg->retention == RETAIN_DELETE ? "true" : "false";
    const char *params[] = {pgarray_text(&ids),
                            pgarray_text(&outcomes),
                            pgarray_text(&delays),
                            pgarray_text(&errors),
                            w->owner,
                            delete};
    const char *mark_params[] = {pgarray_text(&ids), w->owner, delete};
    /* keep trying through reconnects while our lease can still hold */
    PGresult *res;
    for (int tries = 0;; tries++) {
        if (!w->conn)
            res = NULL;
        else if (published == w->count)
            res = run(w, "mark", 3, mark_params, PGRES_TUPLES_OK);
        else
            res = run(w, "record", 6, params, PGRES_TUPLES_OK);
        if (res)
            break;
        if (now_ms() - w->claimed_at > w->cfg->lease_ms) {
            worker_log(w, OBX_LOG_ERROR,
                       "could not record %d outcomes; the rows will be retried "
                       "when their lease expires",
                       w->count);
            goto out;
        }
        usleep(1000 * (tries < 5 ? 100 : 1000));
        /* even during a graceful stop: recording is what the stop waits for */
        ensure_connected(w, w->claimed_at + w->cfg->lease_ms, 0);
    }
    long long recorded[5] = {0}, total = 0;
    if (published == w->count)
        total = recorded[REC_PUBLISHED] = atoll(PQgetvalue(res, 0, 0));
    for (int r = 0; published < w->count && r < PQntuples(res); r++) {
        int outcome = atoi(PQgetvalue(res, r, 0));
        recorded[outcome] = atoll(PQgetvalue(res, r, 1));
        total += recorded[outcome];
    }
    PQclear(res);
    if (total < w->count)
        worker_log(w, OBX_LOG_WARN,
                   "lease lost on %lld of %d rows (another worker took them over "
                   "and will publish them again)",
                   w->count - total, w->count);
    if (holds.count > 0) {
        const char *hold_params[] = {pgarray_text(&holds)};
        PQclear(run(w, "hold", 1, hold_params, PGRES_COMMAND_OK));
    }
    atomic_fetch_add(&w->eng->published, recorded[REC_PUBLISHED]);
    atomic_fetch_add(&w->eng->retried, recorded[REC_RETRY] + recorded[REC_DEFER]);
    atomic_fetch_add(&w->eng->dead, recorded[REC_DEAD]);
    atomic_fetch_add(&w->eng->released, recorded[REC_RELEASE]);
out:
    pgarray_free(&ids);
    pgarray_free(&outcomes);
    pgarray_free(&delays);
    pgarray_free(&errors);
    pgarray_free(&holds);
}

static void end_batch(worker *w)
{
    PQclear(w->claim);
    w->claim = NULL;
    w->count = 0;
    arena_reset(&w->arena);
}

/* ---- idle ---- */

static int nothing_pending(worker *w)
{
    PGresult *res = run(w, "pending", 0, NULL, PGRES_TUPLES_OK);
    if (!res)
        return 0;
    int none = strcmp(PQgetvalue(res, 0, 0), "f") == 0;
    PQclear(res);
    return none;
}

/* Waits for a NOTIFY on the outbox or the poll interval, whichever first. */
static void wait_for_work(worker *w)
{
    long long until = now_ms() + w->cfg->poll_interval_ms;
    while (!stopping(w) && w->conn) {
        poll_drivers(w, 0);
        long long left = until - now_ms();
        if (left <= 0)
            return;
        struct pollfd pfd = {.fd = PQsocket(w->conn), .events = POLLIN};
        int rc = poll(&pfd, 1, left > 100 ? 100 : (int)left);
        if (rc < 0 && errno != EINTR)
            return;
        if (rc > 0) {
            if (!PQconsumeInput(w->conn)) {
                disconnect(w);
                return;
            }
            int woke = 0;
            PGnotify *n;
            while ((n = PQnotifies(w->conn))) { /* a burst of notifications is one wake-up */
                PQfreemem(n);
                woke = 1;
            }
            if (woke)
                return;
        }
    }
}

/* ---- the loop ---- */

void *worker_main(void *arg)
{
    worker *w = arg;
    engine *eng = w->eng;
    if (ensure_instances(w, 1) < 0) {
        atomic_store(&eng->failed, 1);
        engine_request_stop();
        return NULL;
    }
    while (!stopping(w)) {
        if (ensure_connected(w, LLONG_MAX, 1) < 0)
            break;
        int up = ensure_instances(w, 0);
        if (up != 0) {
            nap(w, 100);
            continue;
        }
        int n = claim(w);
        if (n < 0) {
            nap(w, 100);
            continue;
        }
        if (n == 0) {
            end_batch(w);
            if (eng->drain && nothing_pending(w)) {
                worker_log(w, OBX_LOG_INFO, "drained: nothing pending or in flight");
                engine_request_stop();
                break;
            }
            wait_for_work(w);
            continue;
        }
        publish(w);
        await_completions(w);
        reset_recreate_backoff(w);
        record(w);
        end_batch(w);
    }
    for (size_t i = 0; i < w->cfg->output_count; i++)
        close_instance(&w->outs[i]);
    disconnect(w);
    return NULL;
}

worker *worker_new(engine *eng, int index)
{
    worker *w = calloc(1, sizeof *w);
    w->eng = eng;
    w->cfg = eng->cfg;
    w->index = index;
    snprintf(w->owner, sizeof w->owner, "%s:w%d", eng->owner_prefix, index);
    w->outs = calloc(eng->cfg->output_count, sizeof *w->outs);
    size_t n = (size_t)eng->cfg->batch_size;
    w->msgs = calloc(n, sizeof *w->msgs);
    w->slots = calloc(n, sizeof *w->slots);
    w->scratch = calloc(n, sizeof *w->scratch);
    w->scratch_index = calloc(n, sizeof *w->scratch_index);
    w->accept = calloc(n, sizeof *w->accept);
    w->rand_state = (unsigned)(getpid() * 7919 + index * 104729 + now_ms());
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->done, NULL);
    return w;
}

void worker_free(worker *w)
{
    if (!w)
        return;
    arena_free(&w->arena);
    free(w->outs);
    free(w->msgs);
    free(w->slots);
    free(w->scratch);
    free(w->scratch_index);
    free(w->accept);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->done);
    free(w);
}
