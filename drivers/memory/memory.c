/*
 * memory: a fault-injecting driver with no broker. The engine's tests run
 * against it: it can fail the first attempts of every event, fail at
 * random, reject one event type permanently, fail another always as
 * retriable, go fatal after N messages,
 * complete late, complete from its own thread, refuse when full, refuse
 * one event type with a reason, and play an unreachable broker.
 *
 * It keeps order within an instance (OBX_DRIVER_IN_ORDER): once an event of
 * an aggregate fails in a batch, every later one of it in that batch fails
 * too, without reaching the broker's log, as a connection that stops at the
 * first failure would.
 *
 * With record_file set it plays the broker's log: one JSON line per decided
 * outcome, written with a single write(2) on an O_APPEND descriptor so that
 * several relay processes can share one file without interleaving lines.
 * An "ok" line is written BEFORE the completion, as a broker would persist
 * before acknowledging: a test can then count duplicates and lost events.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"
#include "obx/envelope.h"

static const obx_option mem_options[] = {
    {"record_file", OBX_OPT_STRING, 0,
     "append one JSON line per decided outcome to this file (O_APPEND, one write per line)"},
    {"fail_attempts", OBX_OPT_INT, 0,
     "complete the first N attempts of every event as retriable (default 0)"},
    {"retriable_rate", OBX_OPT_DOUBLE, 0,
     "probability 0..1 of an extra random retriable failure (default 0)"},
    {"seed", OBX_OPT_INT, 0, "random seed; each instance adds its own counter (default: time^pid)"},
    {"permanent_event_type", OBX_OPT_STRING, 0,
     "events of this event_type complete as permanent (\"rejected by memory driver\")"},
    {"retriable_event_type", OBX_OPT_STRING, 0,
     "events of this event_type always complete as retriable (\"injected failure\")"},
    {"fatal_after", OBX_OPT_INT, 0,
     "after N accepted messages publish_batch returns fatal (default 0: never)"},
    {"delay_ms", OBX_OPT_INT, 0, "complete this many milliseconds after publish (default 0)"},
    {"threaded", OBX_OPT_BOOL, 0,
     "complete from a background thread instead of poll (default false)"},
    {"max_in_flight", OBX_OPT_INT, 0,
     "refuse messages as unavailable beyond this many in flight (default 100000)"},
    {"unavailable_file", OBX_OPT_STRING, 0,
     "while this file exists the output is unavailable: messages are refused as such"},
    {"refuse_event_type", OBX_OPT_STRING, 0,
     "refuse events of this event_type at publish as retriable, with a reason"},
    {"refuse_all_file", OBX_OPT_STRING, 0,
     "while this file exists every message completes as permanent (an endpoint that refuses "
     "everything; its probe fails)"},
    {"hang_file", OBX_OPT_STRING, 0,
     "while this file exists the \"broker\" hangs: messages are accepted, none is completed"},
    {NULL, 0, 0, NULL},
};

/* A message waiting for its completion. Due times only grow (one delay for
 * all), so the pending set is a FIFO ring. */
typedef struct mem_pending {
    uint64_t token;
    int64_t due_us;
    obx_status status; /* decided at publish: the instance's rand_r is not shared */
    uint32_t attempt;
    char *record; /* record-line prefix, only when record_file is set */
} mem_pending;

struct obx_instance {
    const obx_host *host;
    int record_fd; /* -1 when not recording */
    int64_t fail_attempts;
    double retriable_rate;
    const char *permanent_event_type;
    const char *retriable_event_type;
    const char *unavailable_file;
    const char *refuse_all_file;
    const char *refuse_event_type;
    const char *hang_file;
    int64_t fatal_after;
    int64_t delay_ms;
    int threaded;
    int64_t max_in_flight;
    unsigned rand_state;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t changed;
    mem_pending *ring;
    size_t ring_cap, head, count; /* count: queued, not yet taken for completion */
    size_t in_flight;             /* accepted and not yet completed */
    int64_t accepted;
    int fatal;
    int closed;
    int stopping;
    pthread_t thread;
    int thread_started;
};

static unsigned mem_instance_counter; /* only for distinct seeds; atomically incremented */

static int64_t mem_now_us(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Appends s as a JSON string (with quotes) at *pos; returns 0 or -1 when full. */
static int mem_json_str(char *buf, size_t size, size_t *pos, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t p = *pos;
    if (!s)
        s = "";
    if (p + 1 >= size)
        return -1;
    buf[p++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (p + 7 >= size)
            return -1;
        if (c == '"' || c == '\\') {
            buf[p++] = '\\';
            buf[p++] = (char)c;
        } else if (c < 0x20) {
            memcpy(buf + p, "\\u00", 4);
            buf[p + 4] = hex[c >> 4];
            buf[p + 5] = hex[c & 15];
            p += 6;
        } else {
            buf[p++] = (char)c;
        }
    }
    buf[p++] = '"';
    *pos = p;
    return 0;
}

static char *mem_record_prefix(const obx_message *m)
{
    /* the record's ids; the attempt goes at the end (mem_record), as it always has */
    obx_envelope env;
    obx_envelope_fill(&env, m, OBX_ENVELOPE_SNAKE,
                      OBX_ENVELOPE_STANDARD & ~OBX_ENVELOPE_CREATED_AT);
    const char *dest = m->destination ? m->destination : "";
    size_t size = 128 + 6 * strlen(dest);
    for (size_t i = 0; i < env.count; i++)
        size += 6 * strlen(env.field[i].value);
    char *buf = malloc(size);
    if (!buf)
        return NULL;
    size_t pos = 0;
    for (size_t i = 0; i <= env.count; i++) {
        const char *name = i < env.count ? env.field[i].name : "destination";
        pos += (size_t)snprintf(buf + pos, size - pos, "%s\"%s\":", i ? "," : "{", name);
        mem_json_str(buf, size, &pos, i < env.count ? env.field[i].value : dest); /* sized above */
    }
    buf[pos] = '\0';
    return buf;
}

static const char *mem_status_name(obx_status status)
{
    switch (status) {
    case OBX_OK: return "ok";
    case OBX_PERMANENT: return "permanent";
    default: return "retriable";
    }
}

/* One line, one write(2): O_APPEND makes concurrent appenders safe. */
static void mem_record(obx_instance *inst, const mem_pending *p, obx_status status)
{
    if (inst->record_fd < 0 || !p->record)
        return;
    size_t len = strlen(p->record);
    size_t size = len + 128;
    char stack[1024];
    char *line = size <= sizeof stack ? stack : malloc(size);
    if (!line) {
        inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR, "record_file: out of memory");
        return;
    }
    memcpy(line, p->record, len);
    int n = snprintf(line + len, size - len,
                     ",\"attempt\":%u,\"status\":\"%s\",\"t_us\":%lld,\"pid\":%d}\n", p->attempt,
                     mem_status_name(status), (long long)mem_now_us(CLOCK_REALTIME), (int)getpid());
    ssize_t w = write(inst->record_fd, line, len + (size_t)n);
    if (w != (ssize_t)(len + (size_t)n))
        inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR, "record_file: write failed: %s",
                        w < 0 ? strerror(errno) : "short write");
    if (line != stack)
        free(line);
}

static const char *mem_detail(obx_status status)
{
    switch (status) {
    case OBX_OK: return NULL;
    case OBX_PERMANENT: return "rejected by memory driver";
    default: return "injected failure";
    }
}

/* Records and completes p; called without the lock held. */
static void mem_finish(obx_instance *inst, mem_pending *p, obx_status status, const char *detail)
{
    mem_record(inst, p, status);
    inst->host->complete(inst->host->host_ctx, p->token, status, 0, detail);
    free(p->record);
    p->record = NULL;
}

static int mem_hung(const obx_instance *inst)
{
    return inst->hang_file && access(inst->hang_file, F_OK) == 0;
}

/* Takes the oldest pending message if it is due by now_us (any if now_us < 0:
 * closing, when even a hung "broker" gives back what it holds). */
static int mem_take_due(obx_instance *inst, int64_t now_us, mem_pending *out)
{
    if (inst->count == 0 || (now_us >= 0 && mem_hung(inst)))
        return 0;
    mem_pending *p = &inst->ring[inst->head];
    if (now_us >= 0 && p->due_us > now_us)
        return 0;
    *out = *p;
    inst->head = (inst->head + 1) % inst->ring_cap;
    inst->count--;
    return 1;
}

/* Completes every due message; returns how many. Caller holds no lock. */
static size_t mem_complete_due(obx_instance *inst)
{
    size_t done = 0;
    mem_pending p;
    for (;;) {
        pthread_mutex_lock(&inst->lock);
        int got = mem_take_due(inst, mem_now_us(CLOCK_MONOTONIC), &p);
        pthread_mutex_unlock(&inst->lock);
        if (!got)
            break;
        mem_finish(inst, &p, p.status, mem_detail(p.status));
        /* in_flight drops only after complete: flush()==0 means all delivered */
        pthread_mutex_lock(&inst->lock);
        inst->in_flight--;
        pthread_cond_broadcast(&inst->changed);
        pthread_mutex_unlock(&inst->lock);
        done++;
    }
    return done;
}

static void mem_abs_deadline(struct timespec *ts, int64_t due_us)
{
    ts->tv_sec = due_us / 1000000;
    ts->tv_nsec = (due_us % 1000000) * 1000;
}

static void *mem_thread(void *arg)
{
    obx_instance *inst = arg;
    pthread_mutex_lock(&inst->lock);
    while (!inst->stopping) {
        if (inst->count == 0) {
            pthread_cond_wait(&inst->changed, &inst->lock);
            continue;
        }
        int64_t due = inst->ring[inst->head].due_us;
        if (mem_hung(inst)) /* look again shortly */
            due = mem_now_us(CLOCK_MONOTONIC) + 20000;
        if (due > mem_now_us(CLOCK_MONOTONIC)) {
            struct timespec ts;
            mem_abs_deadline(&ts, due);
            pthread_cond_timedwait(&inst->changed, &inst->lock, &ts);
            continue;
        }
        pthread_mutex_unlock(&inst->lock);
        mem_complete_due(inst);
        pthread_mutex_lock(&inst->lock);
    }
    pthread_mutex_unlock(&inst->lock);
    return NULL;
}

static void mem_free(obx_instance *inst)
{
    if (inst->record_fd >= 0)
        close(inst->record_fd);
    pthread_cond_destroy(&inst->changed);
    pthread_mutex_destroy(&inst->lock);
    free(inst->ring);
    free(inst);
}

static obx_instance *mem_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->record_fd = -1;
    inst->max_in_flight = 100000;
    pthread_mutex_init(&inst->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&inst->changed, &ca);
    pthread_condattr_destroy(&ca);

    void *ctx = host->host_ctx;
    int64_t seed = (int64_t)time(NULL) ^ (int64_t)getpid();
    host->get_int(ctx, "fail_attempts", &inst->fail_attempts);
    host->get_double(ctx, "retriable_rate", &inst->retriable_rate);
    host->get_string(ctx, "permanent_event_type", &inst->permanent_event_type);
    host->get_string(ctx, "retriable_event_type", &inst->retriable_event_type);
    host->get_string(ctx, "unavailable_file", &inst->unavailable_file);
    host->get_string(ctx, "refuse_all_file", &inst->refuse_all_file);
    host->get_string(ctx, "refuse_event_type", &inst->refuse_event_type);
    host->get_string(ctx, "hang_file", &inst->hang_file);
    host->get_int(ctx, "fatal_after", &inst->fatal_after);
    host->get_int(ctx, "delay_ms", &inst->delay_ms);
    host->get_bool(ctx, "threaded", &inst->threaded);
    host->get_int(ctx, "max_in_flight", &inst->max_in_flight);
    host->get_int(ctx, "seed", &seed);
    inst->rand_state =
        (unsigned)seed + __atomic_add_fetch(&mem_instance_counter, 1, __ATOMIC_RELAXED);

    const char *why = NULL;
    if (inst->fail_attempts < 0)
        why = "fail_attempts must be >= 0";
    else if (!(inst->retriable_rate >= 0.0 && inst->retriable_rate <= 1.0))
        why = "retriable_rate must be between 0 and 1";
    else if (inst->fatal_after < 0)
        why = "fatal_after must be >= 0";
    else if (inst->delay_ms < 0 || inst->delay_ms > 3600 * 1000)
        why = "delay_ms must be between 0 and 3600000";
    else if (inst->max_in_flight < 1)
        why = "max_in_flight must be >= 1";
    if (why) {
        snprintf(errstr, errstr_size, "%s", why);
        mem_free(inst);
        return NULL;
    }

    const char *record_file = NULL;
    if (host->get_string(ctx, "record_file", &record_file)) {
        inst->record_fd = open(record_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (inst->record_fd < 0) {
            snprintf(errstr, errstr_size, "record_file %s: %s", record_file, strerror(errno));
            mem_free(inst);
            return NULL;
        }
    }
    if (inst->threaded) {
        int rc = pthread_create(&inst->thread, NULL, mem_thread, inst);
        if (rc != 0) {
            snprintf(errstr, errstr_size, "cannot start completion thread: %s", strerror(rc));
            mem_free(inst);
            return NULL;
        }
        inst->thread_started = 1;
    }
    return inst;
}

static int mem_grow(obx_instance *inst)
{
    size_t cap = inst->ring_cap ? inst->ring_cap * 2 : 1024;
    mem_pending *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return -1;
    for (size_t i = 0; i < inst->count; i++)
        ring[i] = inst->ring[(inst->head + i) % inst->ring_cap];
    free(inst->ring);
    inst->ring = ring;
    inst->ring_cap = cap;
    inst->head = 0;
    return 0;
}

static obx_status mem_decide(obx_instance *inst, const obx_message *m)
{
    if (inst->refuse_all_file && access(inst->refuse_all_file, F_OK) == 0)
        return OBX_PERMANENT;
    if (inst->permanent_event_type && m->event_type &&
        strcmp(inst->permanent_event_type, m->event_type) == 0)
        return OBX_PERMANENT;
    if (inst->retriable_event_type && m->event_type &&
        strcmp(inst->retriable_event_type, m->event_type) == 0)
        return OBX_RETRIABLE;
    if ((int64_t)m->attempt <= inst->fail_attempts)
        return OBX_RETRIABLE;
    if (inst->retriable_rate > 0.0 &&
        (double)rand_r(&inst->rand_state) / ((double)RAND_MAX + 1.0) < inst->retriable_rate)
        return OBX_RETRIABLE;
    return OBX_OK;
}

static void mem_refuse(obx_instance *inst, const obx_message *m, const char *why)
{
    if (OBX_HOST_HAS(inst->host, refuse))
        inst->host->refuse(inst->host->host_ctx, m->token, 0, why);
}

/* Did an earlier message of m's aggregate in this batch fail? */
static int mem_after_failure(const obx_message *msgs, const obx_status *outcome, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (outcome[k] != OBX_OK && strcmp(msgs[k].aggregate_type, msgs[i].aggregate_type) == 0 &&
            strcmp(msgs[k].aggregate_id, msgs[i].aggregate_id) == 0)
            return 1;
    return 0;
}

/* Queues one message; returns its accept status and, through *decided, how
 * it will complete. Caller holds the lock. */
static obx_status mem_accept(obx_instance *inst, const obx_message *m, int after_failure,
                             int64_t now_us, obx_status *decided)
{
    *decided = OBX_RETRIABLE;
    if ((int64_t)inst->in_flight >= inst->max_in_flight) {
        mem_refuse(inst, m, "max_in_flight reached");
        return OBX_UNAVAILABLE;
    }
    if (inst->refuse_event_type && strcmp(inst->refuse_event_type, m->event_type) == 0) {
        mem_refuse(inst, m, "refuse_event_type: this event type is refused");
        return OBX_RETRIABLE;
    }
    if (inst->count == inst->ring_cap && mem_grow(inst) != 0)
        return OBX_RETRIABLE;
    *decided = after_failure ? OBX_RETRIABLE : mem_decide(inst, m);
    mem_pending p = {
        .token = m->token,
        .due_us = now_us + inst->delay_ms * 1000,
        .status = *decided,
        .attempt = m->attempt,
    };
    /* a message behind a failed one never reaches the broker's log */
    if (inst->record_fd >= 0 && !after_failure && !(p.record = mem_record_prefix(m)))
        return OBX_RETRIABLE;
    inst->ring[(inst->head + inst->count) % inst->ring_cap] = p;
    inst->count++;
    inst->in_flight++;
    inst->accepted++;
    return OBX_OK;
}

static obx_status mem_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                    obx_status *accept)
{
    obx_status rc = OBX_OK;
    int64_t now_us = mem_now_us(CLOCK_MONOTONIC);
    int unavailable = inst->unavailable_file && access(inst->unavailable_file, F_OK) == 0;
    obx_status *outcome = calloc(count ? count : 1, sizeof *outcome);
    int failures = 0; /* an aggregate is looked up only behind a failure */
    pthread_mutex_lock(&inst->lock);
    for (size_t i = 0; i < count; i++) {
        if (inst->closed || inst->fatal ||
            (inst->fatal_after > 0 && inst->accepted >= inst->fatal_after)) {
            inst->fatal = 1;
            accept[i] = outcome[i] = OBX_FATAL;
            rc = OBX_FATAL;
            failures++;
            continue;
        }
        if (unavailable) {
            mem_refuse(inst, &msgs[i], "unavailable_file exists");
            accept[i] = outcome[i] = OBX_UNAVAILABLE;
            failures++;
            continue;
        }
        int after = outcome && failures ? mem_after_failure(msgs, outcome, i) : 0;
        accept[i] = mem_accept(inst, &msgs[i], after, now_us, &outcome[i]);
        if (accept[i] != OBX_OK)
            outcome[i] = accept[i];
        failures += outcome && outcome[i] != OBX_OK;
    }
    free(outcome);
    if (inst->threaded)
        pthread_cond_broadcast(&inst->changed);
    pthread_mutex_unlock(&inst->lock);
    if (!inst->threaded && inst->delay_ms == 0)
        mem_complete_due(inst);
    return rc;
}

static void mem_poll(obx_instance *inst, int timeout_ms)
{
    if (inst->threaded) { /* the thread completes: wait for it rather than let the host spin */
        pthread_mutex_lock(&inst->lock);
        if (inst->in_flight > 0 && timeout_ms > 0) {
            struct timespec ts;
            mem_abs_deadline(&ts, mem_now_us(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000);
            pthread_cond_timedwait(&inst->changed, &inst->lock, &ts);
        }
        pthread_mutex_unlock(&inst->lock);
        return;
    }
    if (mem_complete_due(inst) > 0 || timeout_ms <= 0)
        return;
    /* sleep until the oldest message is due, at most timeout_ms */
    int64_t wake = mem_now_us(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000;
    pthread_mutex_lock(&inst->lock);
    if (inst->count > 0 && inst->ring[inst->head].due_us < wake)
        wake = inst->ring[inst->head].due_us;
    pthread_mutex_unlock(&inst->lock);
    int64_t wait = wake - mem_now_us(CLOCK_MONOTONIC);
    if (wait > 0) {
        struct timespec ts = {wait / 1000000, (wait % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    mem_complete_due(inst);
}

static size_t mem_flush(obx_instance *inst, int timeout_ms)
{
    int64_t deadline =
        mem_now_us(CLOCK_MONOTONIC) + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000;
    size_t left;
    for (;;) {
        if (!inst->threaded)
            mem_complete_due(inst);
        pthread_mutex_lock(&inst->lock);
        left = inst->in_flight;
        int64_t now = mem_now_us(CLOCK_MONOTONIC);
        if (left == 0 || now >= deadline) {
            pthread_mutex_unlock(&inst->lock);
            return left;
        }
        int64_t wake = deadline;
        if (inst->count > 0 && inst->ring[inst->head].due_us < wake)
            wake = inst->ring[inst->head].due_us;
        struct timespec ts;
        mem_abs_deadline(&ts, wake);
        pthread_cond_timedwait(&inst->changed, &inst->lock, &ts);
        pthread_mutex_unlock(&inst->lock);
    }
}

static void mem_close(obx_instance *inst)
{
    if (inst->closed)
        return;
    if (inst->thread_started) {
        pthread_mutex_lock(&inst->lock);
        inst->stopping = 1;
        pthread_cond_broadcast(&inst->changed);
        pthread_mutex_unlock(&inst->lock);
        pthread_join(inst->thread, NULL);
        inst->thread_started = 0;
    }
    /* what the "broker" has acknowledged by now completes as decided */
    mem_complete_due(inst);
    mem_pending p;
    pthread_mutex_lock(&inst->lock);
    while (mem_take_due(inst, -1, &p)) {
        pthread_mutex_unlock(&inst->lock);
        mem_finish(inst, &p, OBX_RETRIABLE, "aborted");
        pthread_mutex_lock(&inst->lock);
        inst->in_flight--;
    }
    inst->closed = 1;
    pthread_mutex_unlock(&inst->lock);
}

static void mem_destroy(obx_instance *inst)
{
    if (!inst)
        return;
    mem_close(inst);
    mem_free(inst);
}

static obx_status mem_probe(obx_instance *inst, int timeout_ms)
{
    (void)timeout_ms;
    int refusing = inst->refuse_all_file && access(inst->refuse_all_file, F_OK) == 0;
    int unavailable = inst->unavailable_file && access(inst->unavailable_file, F_OK) == 0;
    return refusing || unavailable ? OBX_UNAVAILABLE : OBX_OK;
}

static const obx_driver_def mem_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "memory",
    .version = "1.0.0",
    .description = "fault-injecting in-memory driver for tests (no broker)",
    .options = mem_options,
    .create = mem_create,
    .publish_batch = mem_publish_batch,
    .poll = mem_poll,
    .flush = mem_flush,
    .close = mem_close,
    .destroy = mem_destroy,
    .flags = OBX_DRIVER_IN_ORDER,
    .probe = mem_probe,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &mem_def;
}
