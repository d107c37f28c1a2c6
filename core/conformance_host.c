/*
 * check-driver's recording host: the real host table (host_init, so option
 * getters and defaults are the relay's own) with completions and refusals
 * routed to a recorder that checks every token against what was published.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance_run.h"

cf_run *cf_current;
static uint32_t cf_next_tag = 0x0B0;

int64_t cf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cf_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void cf_result(cf_run *run, const char *verdict, const char *name, const char *fmt, ...)
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

/* ---- the recording host ---- */

void cf_problem(cf_recorder *rec, const char *fmt, ...)
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
    if ((unsigned)status > OBX_STATUS_MAX) {
        rec->bad_status++;
        cf_problem(rec, "completion status %d is not an obx_status (OBX_OK .. OBX_UNAVAILABLE)",
                   (int)status);
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

/* host->refuse: only from inside publish_batch, at most once per refused message. */
static void cf_on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    (void)native_code;
    cf_recorder *rec = arg;
    size_t len = detail ? strlen(detail) : 0; /* the host copies it: it must be a string */
    uint32_t tag = (uint32_t)(token >> 32);
    size_t idx = (size_t)(token & 0xffffffffu);
    pthread_mutex_lock(&rec->lock);
    if (!rec->in_publish || !pthread_equal(rec->publisher, pthread_self())) {
        rec->bad_refuse++;
        cf_problem(rec, "refuse for token %#llx was called outside publish_batch",
                   (unsigned long long)token);
    } else if (tag != rec->tag || idx < rec->batch_first || idx >= rec->used) {
        rec->bad_refuse++;
        cf_problem(rec, "refuse for token %#llx, which is not in the batch being published",
                   (unsigned long long)token);
    } else if (++rec->slots[idx].refusals == 2) {
        rec->bad_refuse++;
        cf_problem(rec, "refuse called twice for token %#llx (second detail \"%.*s\")",
                   (unsigned long long)token, (int)(len > 80 ? 80 : len), detail ? detail : "");
    }
    pthread_mutex_unlock(&rec->lock);
}

void cf_host_for(cf_run *run, cf_instance *ci, const cfg_output *output)
{
    host_init(&ci->host, run->drv, output, cf_on_complete, &ci->rec);
    ci->host.on_refuse = cf_on_refuse;
}

cf_instance *cf_new(cf_run *run)
{
    cf_instance *ci = calloc(1, sizeof *ci);
    pthread_mutex_init(&ci->rec.lock, NULL);
    ci->rec.tag = cf_next_tag++;
    cf_host_for(run, ci, run->output);
    return ci;
}

/* Creates the driver instance; prints FAIL name and returns -1 on refusal. */
int cf_create(cf_run *run, cf_instance *ci, const char *name)
{
    char err[512] = "";
    ci->inst = run->def->create(&ci->host.host, err, sizeof err);
    if (!ci->inst) {
        cf_fail(run, name, "create failed with valid options: %s", err[0] ? err : "(no errstr)");
        return -1;
    }
    return 0;
}

/* Accepted messages without a completion yet. */
size_t cf_pending(cf_recorder *rec)
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

int cf_misrouted(cf_recorder *rec)
{
    pthread_mutex_lock(&rec->lock);
    int bad = rec->foreign || rec->unknown;
    pthread_mutex_unlock(&rec->lock);
    return bad;
}

/* Closes while recording which completions happen during close. */
void cf_close_now(cf_run *run, cf_instance *ci)
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

void cf_destroy(cf_run *run, cf_instance *ci)
{
    if (ci->inst)
        run->def->destroy(ci->inst);
    ci->inst = NULL;
}

/* Reports contract violations seen by rec; returns 1 when there were some. */
int cf_violations(cf_run *run, cf_recorder *rec, const char *name)
{
    pthread_mutex_lock(&rec->lock);
    int bad = rec->dup || rec->unknown || rec->foreign || rec->after_close ||
              rec->refused_completed || rec->bad_status || rec->bad_refuse;
    if (bad) {
        const char *rule = rec->dup                 ? "exactly one completion per accepted message"
                           : rec->after_close       ? "no completion after close returns"
                           : rec->foreign           ? "instances must not share state"
                           : rec->refused_completed ? "a refused message gets no completion"
                           : rec->bad_status        ? "statuses are obx_status values"
                           : rec->bad_refuse
                               ? "refuse only from inside publish_batch, at most once, "
                                 "for a message it refuses"
                               : "complete only tokens you were given";
        cf_fail(run, name,
                "%s (%zu duplicate, %zu after close, %zu unknown, %zu foreign, %zu for refused, "
                "%zu bad status, %zu bad refuse). Rule: %s",
                rec->problem, rec->dup, rec->after_close, rec->unknown, rec->foreign,
                rec->refused_completed, rec->bad_status, rec->bad_refuse, rule);
        /* the next check reports only what happens after this one */
        rec->dup = rec->unknown = rec->foreign = rec->after_close = 0;
        rec->refused_completed = rec->bad_status = rec->bad_refuse = 0;
        rec->problem[0] = '\0';
    }
    pthread_mutex_unlock(&rec->lock);
    return bad;
}

void cf_count_refusals(cf_run *run, cf_recorder *rec)
{
    pthread_mutex_lock(&rec->lock);
    size_t refused = rec->refused, reasons = rec->reasons;
    rec->refused = rec->reasons = 0;
    pthread_mutex_unlock(&rec->lock);
    pthread_mutex_lock(&run->threads_lock);
    run->refused += refused;
    run->reasons += reasons;
    pthread_mutex_unlock(&run->threads_lock);
}
