/*
 * check-driver: loads any driver against a recording fake host and checks
 * the completion contract of include/obx/driver.h. Every check builds its
 * own instance and recorder, so a failure names the behaviour at fault.
 *
 * Message memory is poisoned and freed as soon as publish_batch returns: a
 * driver that keeps pointers into it reads garbage (and AddressSanitizer or
 * valgrind says where).
 */
#include "conformance.h"

#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "host.h"
#include "loader.h"
#include "log.h"

#define CF_CAPACITY 4096 /* tokens per recorder */
#define CF_MAX_THREADS 32
#define CF_MANY 1000
#define CF_PUBLISH_BOUND_MS 5000 /* a publish_batch of CF_MANY slower than this blocks */
#define CF_AFTER_CLOSE_MS 300    /* how long to watch for completions after close */

typedef struct cf_slot {
    uint8_t published;
    uint8_t accept_known;
    uint8_t completions;
    uint8_t accept;
    uint8_t status;
} cf_slot;

/* Everything one instance reported, guarded by lock (completions come from any thread). */
typedef struct cf_recorder {
    pthread_mutex_t lock;
    uint32_t tag; /* high half of every token of this instance */
    size_t used;
    cf_slot slots[CF_CAPACITY];
    int in_close, closed;
    size_t completions, during_close[4], status_count[4];
    size_t dup, unknown, foreign, after_close, refused_completed, bad_status;
    char problem[320]; /* the first violation, in words */
} cf_recorder;

typedef struct cf_instance {
    host_ctx host;
    cf_recorder rec;
    obx_instance *inst;
} cf_instance;

typedef struct cf_run {
    const loaded_driver *drv;
    const obx_driver_def *def;
    relay_config *cfg;
    const cfg_output *output;
    const char *destination;
    int timeout_ms;
    unsigned rand_state;
    int failed;
    /* threads that delivered completions, across all checks */
    pthread_mutex_t threads_lock;
    pthread_t threads[CF_MAX_THREADS];
    size_t thread_count;
    pthread_t host_threads[2];
    size_t host_thread_count;
    size_t off_host_completions, total_completions;
} cf_run;

static cf_run *cf_current; /* for the completion callback's thread bookkeeping */
static uint32_t cf_next_tag = 0x0B0;

static int64_t cf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cf_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void cf_result(cf_run *run, const char *verdict, const char *name, const char *fmt, ...)
{
    char why[1024] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    if (strcmp(verdict, "FAIL") == 0)
        run->failed = 1;
    printf("%s %s%s%s\n", verdict, name, why[0] ? ": " : "", why);
    fflush(stdout);
}

#define cf_pass(run, name, ...) cf_result(run, "PASS", name, __VA_ARGS__)
#define cf_fail(run, name, ...) cf_result(run, "FAIL", name, __VA_ARGS__)
#define cf_skip(run, name, ...) cf_result(run, "SKIP", name, __VA_ARGS__)

/* ---- the recording host ---- */

static void cf_problem(cf_recorder *rec, const char *fmt, ...)
{
    if (rec->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec->problem, sizeof rec->problem, fmt, ap);
    va_end(ap);
}

static void cf_note_thread(void)
{
    cf_run *run = cf_current;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&run->threads_lock);
    run->total_completions++;
    int host = 0;
    for (size_t i = 0; i < run->host_thread_count; i++)
        host |= pthread_equal(run->host_threads[i], self);
    if (!host)
        run->off_host_completions++;
    size_t i = 0;
    while (i < run->thread_count && !pthread_equal(run->threads[i], self))
        i++;
    if (i == run->thread_count && i < CF_MAX_THREADS)
        run->threads[run->thread_count++] = self;
    pthread_mutex_unlock(&run->threads_lock);
}

static void cf_on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                           const char *detail)
{
    (void)native_code;
    cf_recorder *rec = arg;
    cf_note_thread();
    pthread_mutex_lock(&rec->lock);
    rec->completions++;
    if (rec->closed) {
        rec->after_close++;
        cf_problem(rec, "token %#llx completed after close had returned",
                   (unsigned long long)token);
    }
    if ((unsigned)status > OBX_FATAL) {
        rec->bad_status++;
        cf_problem(rec, "completion status %d is not an obx_status", (int)status);
    } else {
        rec->status_count[status]++;
        if (rec->in_close)
            rec->during_close[status]++;
    }
    uint32_t tag = (uint32_t)(token >> 32);
    size_t idx = (size_t)(token & 0xffffffffu);
    if (tag != rec->tag) {
        rec->foreign++;
        cf_problem(rec,
                   "completion for token %#llx, which this instance was never given "
                   "(it belongs to another instance: shared state between instances?)",
                   (unsigned long long)token);
    } else if (idx >= rec->used || !rec->slots[idx].published) {
        rec->unknown++;
        cf_problem(rec, "completion for unknown token %#llx", (unsigned long long)token);
    } else {
        cf_slot *s = &rec->slots[idx];
        if (s->completions < 255)
            s->completions++;
        s->status = (uint8_t)status;
        if (s->completions == 2) {
            rec->dup++;
            cf_problem(rec, "token %#llx completed twice (second status %d, detail \"%s\")",
                       (unsigned long long)token, (int)status, detail ? detail : "");
        }
        if (s->accept_known && s->accept != OBX_OK) {
            rec->refused_completed++;
            cf_problem(rec, "token %#llx was refused at publish (accept status %d) but completed",
                       (unsigned long long)token, s->accept);
        }
    }
    pthread_mutex_unlock(&rec->lock);
}

static cf_instance *cf_new(cf_run *run)
{
    cf_instance *ci = calloc(1, sizeof *ci);
    pthread_mutex_init(&ci->rec.lock, NULL);
    ci->rec.tag = cf_next_tag++;
    host_init(&ci->host, run->drv, run->output, cf_on_complete, &ci->rec);
    return ci;
}

/* Creates the driver instance; prints FAIL name and returns -1 on refusal. */
static int cf_create(cf_run *run, cf_instance *ci, const char *name)
{
    char err[512] = "";
    ci->inst = run->def->create(&ci->host.host, err, sizeof err);
    if (!ci->inst) {
        cf_fail(run, name, "create failed with valid options: %s", err[0] ? err : "(no errstr)");
        return -1;
    }
    return 0;
}

/* ---- realistic messages ---- */

typedef struct cf_batch {
    size_t count;
    obx_message *msgs;
    obx_status *accept;
    obx_header *headers;
    struct cf_msg_mem *arena;
} cf_batch;

/* The strings of one message, poisoned after publish_batch returns. */
typedef struct cf_msg_mem {
    char event_id[40], agg[40], trace[80], payload[608];
} cf_msg_mem;

static void cf_uuid(cf_run *run, char *out)
{
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (unsigned char)rand_r(&run->rand_state);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
            b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
            b[15]);
}

/* Builds count messages with the next tokens of rec (marked published). */
static cf_batch *cf_batch_new(cf_run *run, cf_recorder *rec, size_t count)
{
    static const char *const types[] = {"order.created", "order.paid", "order.shipped"};
    cf_batch *b = calloc(1, sizeof *b);
    size_t n = count ? count : 1; /* a real array even for a batch of 0 */
    b->count = count;
    b->msgs = calloc(n, sizeof *b->msgs);
    b->accept = calloc(n, sizeof *b->accept);
    b->headers = calloc(n * 2, sizeof *b->headers);
    b->arena = calloc(n, sizeof *b->arena);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pthread_mutex_lock(&rec->lock);
    size_t first = rec->used;
    if (first + count > CF_CAPACITY) {
        fprintf(stderr, "check-driver: internal error: recorder full\n");
        abort();
    }
    for (size_t i = 0; i < count; i++)
        rec->slots[first + i].published = 1;
    rec->used += count;
    pthread_mutex_unlock(&rec->lock);

    for (size_t i = 0; i < count; i++) {
        size_t seq = first + i;
        cf_msg_mem *a = &b->arena[i];
        obx_message *m = &b->msgs[i];
        char *event_id = a->event_id, *agg = a->agg, *trace = a->trace, *payload = a->payload;
        cf_uuid(run, event_id);
        snprintf(agg, 40, "order-%zu", seq % 37);
        snprintf(trace, 80, "00-%08x%08x%08x%08x-%08x%08x-01", (unsigned)rand_r(&run->rand_state),
                 (unsigned)rand_r(&run->rand_state), (unsigned)seq, rec->tag,
                 (unsigned)rand_r(&run->rand_state), (unsigned)seq);
        *m = (obx_message){
            .token = ((uint64_t)rec->tag << 32) | seq,
            .event_id = event_id,
            .event_type = types[seq % 3],
            .aggregate_type = "Order",
            .aggregate_id = agg,
            .destination = run->destination,
            .content_type = "application/json",
            .created_at_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 - 1000 + (int64_t)i,
            .attempt = 1,
        };
        if (seq % 50 == 49) { /* a binary payload: every byte value */
            for (int k = 0; k < 256; k++)
                payload[k] = (char)k;
            m->payload = payload;
            m->payload_len = 256;
            m->content_type = "application/octet-stream";
        } else if (seq % 97 == 13) { /* the payload column is nullable */
            m->payload = NULL;
            m->payload_len = 0;
        } else {
            int len = snprintf(payload, sizeof a->payload,
                               "{\"order_id\":\"%s\",\"seq\":%zu,\"amount_cents\":%u,"
                               "\"currency\":\"EUR\",\"customer\":\"Zo\xc3\xab \\\"Q\\\" "
                               "M\xc3\xbcller\",\"lines\":[{\"sku\":\"SKU-%u\",\"qty\":%zu}]}",
                               agg, seq, (unsigned)rand_r(&run->rand_state) % 100000,
                               (unsigned)rand_r(&run->rand_state) % 9999, 1 + seq % 5);
            m->payload = payload;
            m->payload_len = (size_t)len;
        }
        if (seq % 3 != 2) { /* some rows have no headers */
            obx_header *h = &b->headers[i * 2];
            h[0] = (obx_header){"traceparent", trace};
            h[1] = (obx_header){"tenant", seq % 2 ? "acme" : "globex"};
            m->headers = h;
            m->header_count = 2;
        }
    }
    return b;
}

/* After publish returns: record accept statuses, then poison and free the memory. */
static size_t cf_batch_done(cf_recorder *rec, cf_batch *b)
{
    size_t accepted = 0;
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < b->count; i++) {
        cf_slot *s = &rec->slots[b->msgs[i].token & 0xffffffffu];
        obx_status a = b->accept[i];
        if ((unsigned)a > OBX_FATAL) {
            rec->bad_status++;
            cf_problem(rec,
                       "accept[%zu] = %d is not an obx_status (publish_batch must write "
                       "every accept entry)",
                       i, (int)a);
            a = OBX_RETRIABLE;
        }
        s->accept = (uint8_t)a;
        s->accept_known = 1;
        if (a == OBX_OK)
            accepted++;
        else if (s->completions > 0) {
            rec->refused_completed++;
            cf_problem(rec, "message %zu was refused at publish (accept %d) but got a completion",
                       i, (int)a);
        }
    }
    pthread_mutex_unlock(&rec->lock);
    size_t n = b->count ? b->count : 1;
    memset(b->arena, 0xA5, n * sizeof *b->arena);
    memset(b->headers, 0xA5, n * 2 * sizeof *b->headers);
    memset(b->msgs, 0xA5, n * sizeof *b->msgs);
    free(b->arena);
    free(b->headers);
    free(b->msgs);
    free(b->accept);
    free(b);
    return accepted;
}

/* Publishes count messages; returns the accepted count, sets *rc and *ms. */
static size_t cf_publish(cf_run *run, cf_instance *ci, size_t count, obx_status *rc, int64_t *ms)
{
    cf_batch *b = cf_batch_new(run, &ci->rec, count);
    /* a driver that does not write accept[] must not pass by luck */
    for (size_t i = 0; i < count; i++)
        b->accept[i] = (obx_status)0x7f;
    int64_t t0 = cf_now_ms();
    obx_status r = run->def->publish_batch(ci->inst, b->msgs, count, b->accept);
    if (ms)
        *ms = cf_now_ms() - t0;
    if (rc)
        *rc = r;
    return cf_batch_done(&ci->rec, b);
}

/* Accepted messages without a completion yet. */
static size_t cf_pending(cf_recorder *rec)
{
    size_t n = 0;
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < rec->used; i++) {
        const cf_slot *s = &rec->slots[i];
        n += s->accept_known && s->accept == OBX_OK && s->completions == 0;
    }
    pthread_mutex_unlock(&rec->lock);
    return n;
}

static int cf_misrouted(cf_recorder *rec)
{
    pthread_mutex_lock(&rec->lock);
    int bad = rec->foreign || rec->unknown;
    pthread_mutex_unlock(&rec->lock);
    return bad;
}

/* Drives poll on n instances until nothing is pending or the run's timeout;
 * returns what is left. Stops early once completions go to the wrong
 * instance: what is missing will never come. */
static size_t cf_drain_all(cf_run *run, cf_instance **cis, size_t n)
{
    int64_t deadline = cf_now_ms() + run->timeout_ms;
    for (;;) {
        size_t left = 0;
        int misrouted = 0;
        for (size_t i = 0; i < n; i++) {
            left += cf_pending(&cis[i]->rec);
            misrouted |= cf_misrouted(&cis[i]->rec);
        }
        if (left == 0 || misrouted || cf_now_ms() >= deadline)
            return left;
        for (size_t i = 0; i < n; i++) {
            if (run->def->poll)
                run->def->poll(cis[i]->inst, n > 1 ? 10 : 50);
            else
                cf_sleep_ms(5);
        }
    }
}

static size_t cf_drain(cf_run *run, cf_instance *ci)
{
    return cf_drain_all(run, &ci, 1);
}

/* Closes while recording which completions happen during close. */
static void cf_close_now(cf_run *run, cf_instance *ci)
{
    pthread_mutex_lock(&ci->rec.lock);
    ci->rec.in_close = 1;
    pthread_mutex_unlock(&ci->rec.lock);
    run->def->close(ci->inst);
    pthread_mutex_lock(&ci->rec.lock);
    ci->rec.in_close = 0;
    ci->rec.closed = 1;
    pthread_mutex_unlock(&ci->rec.lock);
}

static void cf_destroy(cf_run *run, cf_instance *ci)
{
    if (ci->inst)
        run->def->destroy(ci->inst);
    ci->inst = NULL;
}

/* Reports contract violations seen by rec; returns 1 when there were some. */
static int cf_violations(cf_run *run, cf_recorder *rec, const char *name)
{
    pthread_mutex_lock(&rec->lock);
    int bad = rec->dup || rec->unknown || rec->foreign || rec->after_close ||
              rec->refused_completed || rec->bad_status;
    if (bad) {
        const char *rule = rec->dup                 ? "exactly one completion per accepted message"
                           : rec->after_close       ? "no completion after close returns"
                           : rec->foreign           ? "instances must not share state"
                           : rec->refused_completed ? "a refused message gets no completion"
                           : rec->bad_status        ? "statuses are obx_status values"
                                                    : "complete only tokens you were given";
        cf_fail(run, name,
                "%s (%zu duplicate, %zu after close, %zu unknown, %zu foreign, %zu for refused, "
                "%zu bad status). Rule: %s",
                rec->problem, rec->dup, rec->after_close, rec->unknown, rec->foreign,
                rec->refused_completed, rec->bad_status, rule);
        /* the next check reports only what happens after this one */
        rec->dup = rec->unknown = rec->foreign = rec->after_close = 0;
        rec->refused_completed = rec->bad_status = 0;
        rec->problem[0] = '\0';
    }
    pthread_mutex_unlock(&rec->lock);
    return bad;
}

/* Publishes count, waits for all completions, checks; returns 0 when it passed. */
static int cf_publish_and_drain(cf_run *run, cf_instance *ci, const char *name, size_t count)
{
    obx_status rc;
    int64_t ms;
    size_t accepted = cf_publish(run, ci, count, &rc, &ms);
    if (rc != OBX_OK) {
        cf_fail(run, name,
                "publish_batch of %zu messages returned %d on a fresh instance "
                "(expected OBX_OK)",
                count, (int)rc);
        return -1;
    }
    if (accepted == 0) {
        cf_fail(run, name,
                "none of %zu messages was accepted: accept[i] = OBX_OK is expected "
                "for a healthy instance",
                count);
        return -1;
    }
    size_t left = cf_drain(run, ci);
    if (cf_violations(run, &ci->rec, name))
        return -1;
    if (left) {
        cf_fail(run, name,
                "%zu of %zu accepted messages got no completion within %d ms: every "
                "accepted message needs exactly one completion (from poll, "
                "publish_batch or a driver thread)",
                left, accepted, run->timeout_ms);
        return -1;
    }
    cf_pass(run, name, "%zu accepted, %zu refused, publish_batch took %lld ms", accepted,
            count - accepted, (long long)ms);
    return 0;
}

/* ---- the checks ---- */

static void check_definition(cf_run *run)
{
    const obx_driver_def *def = run->def;
    if (!def->version || !def->description || !def->version[0] || !def->description[0]) {
        cf_fail(run, "definition",
                "set .version and .description (shown by `outbox-relay drivers`)");
        return;
    }
    for (const obx_option *o = def->options; o && o->name; o++) {
        if ((unsigned)o->type > OBX_OPT_DOUBLE ||
            (o->flags & ~(OBX_OPT_REQUIRED | OBX_OPT_SECRET))) {
            cf_fail(run, "definition", "option \"%s\" has an unknown type or flag", o->name);
            return;
        }
        if (!o->description || !o->description[0]) {
            cf_fail(run, "definition", "option \"%s\" has no description", o->name);
            return;
        }
        for (const obx_option *p = def->options; p != o; p++)
            if (strcmp(p->name, o->name) == 0) {
                cf_fail(run, "definition", "option \"%s\" is declared twice", o->name);
                return;
            }
    }
    cf_pass(run, "definition", "driver \"%s\" %s, ABI %u.%u, %u-byte definition", def->name,
            def->version, def->abi_major, def->abi_minor, def->struct_size);
}

static void check_unknown_option(cf_run *run)
{
    const cfg_output *base = run->output;
    size_t n = base ? base->option_count : 0;
    cfg_output out = {.name = base ? base->name : "conformance", .driver = (char *)run->def->name};
    out.options = calloc(n + 1, sizeof *out.options);
    if (n)
        memcpy(out.options, base->options, n * sizeof *out.options);
    out.options[n] = (cfg_value){
        .name = "conformance_no_such_option", .type = OBX_OPT_STRING, .s = "x", .line = 1};
    out.option_count = n + 1;
    char err[512] = "";
    int rc = host_validate_options(run->cfg, &out, run->drv, err, sizeof err);
    free(out.options);
    if (rc == 0)
        cf_fail(run, "unknown_option",
                "an undeclared option was accepted: does the driver "
                "declare \"conformance_no_such_option\"?");
    else
        cf_pass(run, "unknown_option", "refused before create: %s", err);
}

static void check_create_failure(cf_run *run, const char *bad_output)
{
    const cfg_output *out = NULL;
    const char *how;
    if (bad_output) {
        for (size_t i = 0; run->cfg && i < run->cfg->output_count; i++)
            if (strcmp(run->cfg->outputs[i].name, bad_output) == 0)
                out = &run->cfg->outputs[i];
        if (!out) {
            cf_fail(run, "create_failure", "--bad-output %s: no such output in the config",
                    bad_output);
            return;
        }
        char err[512];
        if (host_validate_options(run->cfg, out, run->drv, err, sizeof err) != 0) {
            cf_fail(run, "create_failure",
                    "output %s is refused by option validation (%s), so "
                    "create is not exercised: give it valid option types "
                    "with values create must refuse",
                    bad_output, err);
            return;
        }
        how = "options of the bad output";
    } else {
        const obx_option *o = run->def->options;
        while (o && o->name && !(o->flags & OBX_OPT_REQUIRED))
            o++;
        if (!o || !o->name) {
            cf_skip(run, "create_failure",
                    "the driver has no required option; pass --bad-output "
                    "NAME (an output with values create must refuse)");
            return;
        }
        how = "required options missing (bypassing the host's check)";
    }
    cf_instance *ci = cf_new(run);
    host_init(&ci->host, run->drv, out, cf_on_complete, &ci->rec);
    char err[256];
    memset(err, 0x7f, sizeof err);
    obx_instance *inst = run->def->create(&ci->host.host, err, sizeof err);
    if (inst) {
        run->def->destroy(inst);
        cf_fail(run, "create_failure",
                "create returned an instance with %s: it must return "
                "NULL and explain in errstr",
                how);
    } else if (!memchr(err, '\0', sizeof err) || err[0] == 0x7f || err[0] == '\0') {
        cf_fail(run, "create_failure",
                "create returned NULL with %s but wrote no errstr (a "
                "NUL-terminated one-line reason)",
                how);
    } else {
        cf_pass(run, "create_failure", "%s: \"%s\"", how, err);
    }
    free(ci);
}

static void check_batches(cf_run *run, cf_instance *ci)
{
    /* batch of 0 */
    obx_status rc;
    cf_publish(run, ci, 0, &rc, NULL);
    if (run->def->poll)
        run->def->poll(ci->inst, 100);
    else
        cf_sleep_ms(100);
    if (cf_violations(run, &ci->rec, "batch_0"))
        ;
    else if (rc != OBX_OK)
        cf_fail(run, "batch_0", "publish_batch with count 0 returned %d (expected OBX_OK)",
                (int)rc);
    else if (ci->rec.completions)
        cf_fail(run, "batch_0", "%zu completions after an empty batch", ci->rec.completions);
    else
        cf_pass(run, "batch_0", NULL);

    cf_publish_and_drain(run, ci, "batch_1", 1);

    cf_publish_and_drain(run, ci, "batch_many", CF_MANY);
}

/* publish_batch must not wait for acknowledgements: a detector, not a benchmark. */
static void check_publish_bound(cf_run *run, cf_instance *ci)
{
    obx_status rc;
    int64_t ms;
    size_t accepted = cf_publish(run, ci, CF_MANY, &rc, &ms);
    size_t left = cf_drain(run, ci);
    if (cf_violations(run, &ci->rec, "publish_bound"))
        return;
    if (ms > CF_PUBLISH_BOUND_MS)
        cf_fail(run, "publish_bound",
                "publish_batch of %d messages took %lld ms (> %d ms): it "
                "must hand messages over without waiting for "
                "acknowledgements; complete them later from poll or a thread",
                CF_MANY, (long long)ms, CF_PUBLISH_BOUND_MS);
    else if (left)
        cf_fail(run, "publish_bound", "%zu of %zu accepted messages never completed", left,
                accepted);
    else
        cf_pass(run, "publish_bound", "%d messages in %lld ms", CF_MANY, (long long)ms);
}

static void check_flush(cf_run *run, cf_instance *ci)
{
    const int timeout = 300;
    cf_publish(run, ci, 200, NULL, NULL);
    size_t before = cf_pending(&ci->rec);
    int64_t t0 = cf_now_ms();
    size_t r = run->def->flush(ci->inst, timeout);
    int64_t ms = cf_now_ms() - t0;
    size_t after = cf_pending(&ci->rec);
    if (ms > timeout + 5000)
        cf_fail(run, "flush_timeout",
                "flush(%d ms) returned after %lld ms: it must return by its "
                "timeout",
                timeout, (long long)ms);
    else if (r < after)
        cf_fail(run, "flush_timeout",
                "flush returned %zu but %zu messages still had no "
                "completion: count a message as in flight until its "
                "complete() call has returned",
                r, after);
    else if (r > before)
        cf_fail(run, "flush_timeout", "flush returned %zu, more than the %zu messages in flight", r,
                before);
    else
        cf_pass(run, "flush_timeout", "flush(%d) returned %zu after %lld ms (%zu were in flight)",
                timeout, r, (long long)ms, before);
    size_t left = cf_drain(run, ci);
    if (left)
        cf_fail(run, "flush_drain", "%zu messages never completed after flush", left);
    r = run->def->flush(ci->inst, 0);
    if (r != 0)
        cf_fail(run, "flush_empty", "flush returned %zu with nothing in flight", r);
    cf_violations(run, &ci->rec, "flush_timeout");
}

/* close with messages in flight completes them all, and nothing after. */
static void check_close(cf_run *run, cf_instance *ci, const char *name, int use_destroy)
{
    size_t accepted = cf_publish(run, ci, 500, NULL, NULL);
    if (use_destroy) {
        pthread_mutex_lock(&ci->rec.lock);
        ci->rec.in_close = 1;
        pthread_mutex_unlock(&ci->rec.lock);
        cf_destroy(run, ci);
        pthread_mutex_lock(&ci->rec.lock);
        ci->rec.closed = 1;
        pthread_mutex_unlock(&ci->rec.lock);
    } else {
        cf_close_now(run, ci);
    }
    size_t left = cf_pending(&ci->rec);
    cf_sleep_ms(CF_AFTER_CLOSE_MS);
    if (cf_violations(run, &ci->rec, name))
        return;
    if (left)
        cf_fail(run, name,
                "%zu of %zu accepted messages had no completion when %s returned: "
                "complete every in-flight message as OBX_RETRIABLE (\"aborted\") "
                "unless already acknowledged",
                left, accepted, use_destroy ? "destroy (without close)" : "close");
    else if (ci->rec.during_close[OBX_FATAL])
        cf_fail(run, name, "close completed messages as OBX_FATAL: use OBX_RETRIABLE");
    else
        cf_pass(run, name, "%zu accepted; during %s: %zu ok, %zu retriable, %zu permanent",
                accepted, use_destroy ? "destroy" : "close", ci->rec.during_close[OBX_OK],
                ci->rec.during_close[OBX_RETRIABLE], ci->rec.during_close[OBX_PERMANENT]);
}

static void check_close_twice(cf_run *run, cf_instance *ci)
{
    size_t before = ci->rec.completions;
    run->def->close(ci->inst);
    cf_sleep_ms(50);
    if (cf_violations(run, &ci->rec, "close_twice"))
        return;
    if (ci->rec.completions != before)
        cf_fail(run, "close_twice", "the second close made completions");
    else
        cf_pass(run, "close_twice", NULL);
}

static void check_two_instances(cf_run *run)
{
    cf_instance *a = cf_new(run), *b = cf_new(run);
    if (cf_create(run, a, "two_instances") == 0 && cf_create(run, b, "two_instances") == 0) {
        size_t acc = 0;
        for (int round = 0; round < 3; round++) {
            acc += cf_publish(run, a, 150, NULL, NULL);
            acc += cf_publish(run, b, 150, NULL, NULL);
        }
        cf_instance *both[2] = {a, b};
        size_t left = cf_drain_all(run, both, 2);
        cf_close_now(run, a);
        cf_close_now(run, b);
        cf_sleep_ms(CF_AFTER_CLOSE_MS);
        int bad = cf_violations(run, &a->rec, "two_instances");
        if (!bad)
            bad = cf_violations(run, &b->rec, "two_instances");
        if (!bad && left)
            cf_fail(run, "two_instances", "%zu messages never completed with two instances open",
                    left);
        else if (!bad)
            cf_pass(run, "two_instances", "%zu accepted over two instances, no token crossed", acc);
    }
    cf_destroy(run, a);
    cf_destroy(run, b);
    free(a);
    free(b);
}

/* The host may drive one instance from different threads over its life (never at once). */
static void *cf_handover_thread(void *arg)
{
    void **args = arg;
    cf_run *run = args[0];
    cf_instance *ci = args[1];
    pthread_mutex_lock(&run->threads_lock);
    run->host_threads[run->host_thread_count++] = pthread_self();
    pthread_mutex_unlock(&run->threads_lock);
    cf_publish_and_drain(run, ci, "thread_handover", 300);
    pthread_mutex_lock(&run->threads_lock);
    run->host_thread_count--;
    pthread_mutex_unlock(&run->threads_lock);
    return NULL;
}

static void check_thread_handover(cf_run *run)
{
    cf_instance *ci = cf_new(run);
    if (cf_create(run, ci, "thread_handover") == 0) {
        pthread_t t;
        void *args[2] = {run, ci};
        pthread_create(&t, NULL, cf_handover_thread, args);
        pthread_join(t, NULL);
        cf_close_now(run, ci);
    }
    cf_destroy(run, ci);
    free(ci);
}

static void check_threads(cf_run *run)
{
    pthread_mutex_lock(&run->threads_lock);
    cf_pass(run, "completion_threads",
            "%zu completions from %zu threads, %zu of them off the "
            "host's threads (all tokens checked unique and known)",
            run->total_completions, run->thread_count, run->off_host_completions);
    pthread_mutex_unlock(&run->threads_lock);
}

/* ---- command line ---- */

static void cf_usage(void)
{
    fprintf(stderr,
            "usage: outbox-relay check-driver DRIVER.so|NAME [-c CONFIG] [-o OUTPUT]\n"
            "           [--drivers-dir DIR] [--bad-output NAME] [--destination D] [--timeout SEC]\n"
            "  Loads the driver against a recording host and checks the completion contract.\n"
            "  -c CONFIG        driver options come from this config's output\n"
            "  -o OUTPUT        which output (default: the first whose driver matches)\n"
            "  --bad-output N   an output whose options create must refuse\n"
            "  --destination D  destination of the test messages (default conformance.test)\n"
            "  --timeout SEC    how long to wait for completions (default 30)\n");
}

/* "memory", "./x.so", "/abs/x.so" or "x.so" in the current directory. */
static const char *cf_driver_arg(const char *arg, char *buf, size_t size)
{
    size_t len = strlen(arg);
    if (!strchr(arg, '/') && len > 3 && strcmp(arg + len - 3, ".so") == 0) {
        if (access(arg, R_OK) == 0) {
            snprintf(buf, size, "./%s", arg);
        } else {
            snprintf(buf, size, "%.*s", (int)(len - 3), arg);
        }
        return buf;
    }
    return arg;
}

int conformance_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"drivers-dir", required_argument, NULL, 'd'},
        {"bad-output", required_argument, NULL, 'b'},
        {"destination", required_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *output = NULL, *dir = NULL, *bad_output = NULL;
    cf_run run = {.destination = "conformance.test", .timeout_ms = 30000};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'o': output = optarg; break;
        case 'd': dir = optarg; break;
        case 'b': bad_output = optarg; break;
        case 't': run.destination = optarg; break;
        case 'T': run.timeout_ms = atoi(optarg) * 1000; break;
        case 'h': cf_usage(); return 0;
        default: cf_usage(); return 2;
        }
    }
    if (optind != argc - 1 || run.timeout_ms <= 0) {
        cf_usage();
        return 2;
    }
    log_setup(OBX_LOG_WARN, LOG_FORMAT_TEXT);

    char err[1024];
    relay_config fake_cfg = {.path = "(check-driver)"};
    if (config) {
        run.cfg = config_load(config, err, sizeof err);
        if (!run.cfg) {
            fprintf(stderr, "check-driver: %s\n", err);
            return 2;
        }
        if (!dir)
            dir = run.cfg->drivers_dir;
    }
    char name_buf[4096];
    const char *driver = cf_driver_arg(argv[optind], name_buf, sizeof name_buf);
    loaded_driver *drv = loader_open(dir, driver, err, sizeof err);
    if (!drv) {
        printf("FAIL load: %s\n", err);
        config_free(run.cfg);
        return 1;
    }
    run.drv = drv;
    run.def = &drv->def;
    printf("PASS load: %s\n", drv->path);

    int status = 0;
    if (run.cfg) {
        for (size_t i = 0; i < run.cfg->output_count && !run.output; i++) {
            const cfg_output *o = &run.cfg->outputs[i];
            if (output ? strcmp(o->name, output) == 0 : strcmp(o->driver, drv->def.name) == 0)
                run.output = o;
        }
        if (!run.output) {
            fprintf(stderr, "check-driver: %s: no output %s%s\n", config,
                    output ? "named " : "using driver ", output ? output : drv->def.name);
            status = 2;
            goto out;
        }
        if (host_validate_options(run.cfg, run.output, drv, err, sizeof err) != 0) {
            printf("FAIL options: %s\n", err);
            status = 1;
            goto out;
        }
    } else {
        run.cfg = &fake_cfg; /* no options: the driver's defaults */
    }

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    run.rand_state = (unsigned)(now.tv_nsec ^ getpid());
    pthread_mutex_init(&run.threads_lock, NULL);
    run.host_threads[run.host_thread_count++] = pthread_self();
    cf_current = &run;

    check_definition(&run);
    check_unknown_option(&run);
    check_create_failure(&run, bad_output);

    cf_instance *ci = cf_new(&run);
    if (cf_create(&run, ci, "create") == 0) {
        cf_pass(&run, "create", NULL);
        check_batches(&run, ci);
        check_publish_bound(&run, ci);
        check_flush(&run, ci);
        check_close(&run, ci, "close_in_flight", 0);
        check_close_twice(&run, ci);
        cf_destroy(&run, ci);

        cf_instance *d = cf_new(&run);
        if (cf_create(&run, d, "destroy_in_flight") == 0)
            check_close(&run, d, "destroy_in_flight", 1);
        cf_destroy(&run, d);
        free(d);

        check_two_instances(&run);
        check_thread_handover(&run);
        check_threads(&run);
    }
    free(ci);
    status = run.failed ? 1 : 0;
    printf("RESULT: driver %s %s the conformance checks\n", drv->def.name,
           status ? "FAILS" : "passes");
out:
    loader_close(drv);
    if (run.cfg != &fake_cfg)
        config_free(run.cfg);
    return status;
}
