/* The token ledger: see ledger.h. */
#include "conformance/ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ledger_init(ledger *rec, uint32_t tag, rec_slot *slots, size_t cap)
{
    pthread_mutex_init(&rec->lock, NULL);
    rec->tag = tag;
    rec->slots = slots;
    rec->cap = cap;
}

void ledger_problem(ledger *rec, const char *fmt, ...)
{
    if (rec->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec->problem, sizeof rec->problem, fmt, ap);
    va_end(ap);
}

/* The slot of token, or NULL when it has another tag or is out of range. */
static rec_slot *rec_slot_of(ledger *rec, uint64_t token)
{
    size_t idx = (size_t)(token & 0xffffffffu);
    if ((uint32_t)(token >> 32) != rec->tag || idx >= rec->cap)
        return NULL;
    return &rec->slots[idx];
}

void ledger_publish_begin(ledger *rec, const obx_message *msgs, size_t count)
{
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < count; i++) {
        rec_slot *s = rec_slot_of(rec, msgs[i].token);
        if (s)
            *s = (rec_slot){.published = 1}; /* a new offer: what came before is done */
    }
    rec->in_publish = 1;
    rec->publisher = pthread_self();
    pthread_mutex_unlock(&rec->lock);
}

size_t ledger_publish_end(ledger *rec, const obx_message *msgs, size_t count,
                          const obx_status *accept)
{
    size_t accepted = 0;
    pthread_mutex_lock(&rec->lock);
    rec->in_publish = 0;
    for (size_t i = 0; i < count; i++) {
        obx_status a = accept[i];
        if ((unsigned)a > OBX_STATUS_MAX) {
            rec->bad_status++;
            ledger_problem(rec,
                           "accept[%zu] = %d is not an obx_status (publish_batch must write "
                           "every accept entry)",
                           i, (int)a);
            a = OBX_RETRIABLE;
        }
        accepted += a == OBX_OK;
        rec_slot *s = rec_slot_of(rec, msgs[i].token);
        if (!s)
            continue;
        s->accept = (uint8_t)a;
        s->accept_known = 1;
        if (a != OBX_OK) {
            rec->refused++;
            rec->reasons += s->refusals > 0;
            if (s->completions > 0) {
                rec->refused_completed++;
                ledger_problem(rec,
                               "message %zu was refused at publish (accept %d) but got a "
                               "completion",
                               i, (int)a);
            }
        } else if (s->refusals) {
            rec->bad_refuse++;
            ledger_problem(
                rec, "refuse for message %zu, which publish_batch accepted (accept OBX_OK)", i);
        }
    }
    pthread_mutex_unlock(&rec->lock);
    return accepted;
}

long ledger_complete(ledger *rec, uint64_t token, obx_status status, const char *detail)
{
    long idx = -1;
    pthread_mutex_lock(&rec->lock);
    rec->completions++;
    if (rec->closed) {
        rec->after_close++;
        ledger_problem(rec, "token %#llx completed after close had returned",
                       (unsigned long long)token);
    }
    if ((unsigned)status > OBX_STATUS_MAX) {
        rec->bad_status++;
        ledger_problem(rec, "completion status %d is not an obx_status (OBX_OK .. OBX_UNAVAILABLE)",
                       (int)status);
    } else {
        rec->status_count[status]++;
        if (rec->in_close)
            rec->during_close[status]++;
    }
    rec_slot *s = rec_slot_of(rec, token);
    if ((uint32_t)(token >> 32) != rec->tag) {
        rec->foreign++;
        ledger_problem(rec,
                       "completion for token %#llx, which this instance was never given "
                       "(it belongs to another instance: shared state between instances?)",
                       (unsigned long long)token);
    } else if (!s || !s->published) {
        rec->unknown++;
        ledger_problem(rec, "completion for unknown token %#llx", (unsigned long long)token);
    } else {
        idx = (long)(s - rec->slots);
        if (s->completions < 255)
            s->completions++;
        s->status = (uint8_t)status;
        if (s->completions >= 2) {
            rec->dup++;
            ledger_problem(rec, "token %#llx completed twice (second status %d, detail \"%s\")",
                           (unsigned long long)token, (int)status, detail ? detail : "");
        }
        if (s->accept_known && s->accept != OBX_OK) {
            rec->refused_completed++;
            ledger_problem(rec,
                           "token %#llx was refused at publish (accept status %d) but completed",
                           (unsigned long long)token, s->accept);
        }
    }
    pthread_mutex_unlock(&rec->lock);
    return idx;
}

void ledger_refuse(ledger *rec, uint64_t token, const char *detail)
{
    size_t len = detail ? strlen(detail) : 0; /* the host copies it: it must be a string */
    pthread_mutex_lock(&rec->lock);
    rec_slot *s = rec_slot_of(rec, token);
    if (!rec->in_publish || !pthread_equal(rec->publisher, pthread_self())) {
        rec->bad_refuse++;
        ledger_problem(rec, "refuse for token %#llx was called outside publish_batch",
                       (unsigned long long)token);
    } else if (!s || !s->published || s->accept_known) { /* not of the running batch */
        rec->bad_refuse++;
        ledger_problem(rec, "refuse for token %#llx, which is not in the batch being published",
                       (unsigned long long)token);
    } else if (s->refusals < 255 && ++s->refusals >= 2) {
        rec->bad_refuse++;
        ledger_problem(rec, "refuse called twice for token %#llx (second detail \"%.*s\")",
                       (unsigned long long)token, (int)(len > 80 ? 80 : len), detail ? detail : "");
    }
    pthread_mutex_unlock(&rec->lock);
}

void ledger_closing(ledger *rec)
{
    pthread_mutex_lock(&rec->lock);
    rec->in_close = 1;
    pthread_mutex_unlock(&rec->lock);
}

void ledger_closed(ledger *rec)
{
    pthread_mutex_lock(&rec->lock);
    rec->in_close = 0;
    rec->closed = 1;
    pthread_mutex_unlock(&rec->lock);
}

size_t ledger_pending(ledger *rec)
{
    size_t n = 0;
    pthread_mutex_lock(&rec->lock);
    for (size_t i = 0; i < rec->cap; i++) {
        const rec_slot *s = &rec->slots[i];
        n += s->published && s->completions == 0 && !(s->accept_known && s->accept != OBX_OK);
    }
    pthread_mutex_unlock(&rec->lock);
    return n;
}

int ledger_misrouted(ledger *rec)
{
    pthread_mutex_lock(&rec->lock);
    int bad = rec->foreign || rec->unknown;
    pthread_mutex_unlock(&rec->lock);
    return bad;
}

/* The rule behind the first kind of violation seen, most telling first. */
static const char *rec_rule(const ledger *rec)
{
    return rec->dup                 ? "exactly one completion per accepted message"
           : rec->after_close       ? "no completion after close returns"
           : rec->foreign           ? "instances must not share state"
           : rec->refused_completed ? "a refused message gets no completion"
           : rec->bad_status        ? "statuses are obx_status values"
           : rec->bad_refuse        ? "refuse only from inside publish_batch, at most once, "
                                      "for a message it refuses"
                                    : "complete only tokens you were given";
}

size_t ledger_violations(ledger *rec, char *why, size_t why_size, int reset)
{
    pthread_mutex_lock(&rec->lock);
    size_t n = rec->dup + rec->unknown + rec->foreign + rec->after_close + rec->refused_completed +
               rec->bad_status + rec->bad_refuse;
    if (why_size)
        snprintf(why, why_size,
                 "%s (%zu duplicate, %zu after close, %zu unknown, %zu foreign, %zu for refused, "
                 "%zu bad status, %zu bad refuse). Rule: %s",
                 n ? rec->problem : "no violation", rec->dup, rec->after_close, rec->unknown,
                 rec->foreign, rec->refused_completed, rec->bad_status, rec->bad_refuse,
                 n ? rec_rule(rec) : "-");
    if (n && reset) { /* the next check reports only what happens after this one */
        rec->dup = rec->unknown = rec->foreign = rec->after_close = 0;
        rec->refused_completed = rec->bad_status = rec->bad_refuse = 0;
        rec->problem[0] = '\0';
    }
    pthread_mutex_unlock(&rec->lock);
    return n;
}
