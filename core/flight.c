#include "flight.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "text.h"

void flight_init(flight *f, int capacity, outputs *outs, const char *scope)
{
    memset(f, 0, sizeof *f);
    f->outs = outs;
    f->scope = scope;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->done, NULL);
    f->slots = calloc(capacity, sizeof *f->slots);
    f->scratch = calloc(capacity, sizeof *f->scratch);
    f->scratch_index = calloc(capacity, sizeof *f->scratch_index);
    f->accept = calloc(capacity, sizeof *f->accept);
}

void flight_free(flight *f)
{
    free(f->slots);
    free(f->scratch);
    free(f->scratch_index);
    free(f->accept);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->done);
}

uint32_t flight_begin(flight *f, int count)
{
    pthread_mutex_lock(&f->lock);
    f->seq++;
    f->count = count;
    f->awaiting = 0;
    memset(f->slots, 0, count * sizeof *f->slots);
    uint32_t seq = f->seq;
    pthread_mutex_unlock(&f->lock);
    return seq;
}

void flight_settle(slot *s, slot_state state, obx_status status, const char *detail)
{
    s->state = state;
    s->status = status;
    text_copy(s->detail, sizeof s->detail, detail);
}

/* The slot a token names, if it is in the state wanted. Caller holds the lock. */
static slot *find_slot(flight *f, uint64_t token, slot_state want)
{
    uint32_t seq = (uint32_t)(token >> 32), index = (uint32_t)token;
    if (seq != f->seq || index >= (uint32_t)f->count || f->slots[index].state != want)
        return NULL;
    return &f->slots[index];
}

void flight_on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail)
{
    flight *f = arg;
    pthread_mutex_lock(&f->lock);
    slot *s = find_slot(f, token, SLOT_AWAITING);
    if (s) {
        s->state = SLOT_DONE;
        s->status = status;
        s->native_code = native_code;
        text_copy(s->detail, sizeof s->detail, detail);
        if (status == OBX_FATAL)
            atomic_store(&f->outs->out[s->output].broken, 1);
        if (--f->awaiting == 0 || status == OBX_FATAL)
            pthread_cond_signal(&f->done);
    }
    pthread_mutex_unlock(&f->lock);
    if (!s)
        log_scoped(OBX_LOG_WARN, f->scope,
                   "driver completed an unknown or finished message (token %llx): ignored",
                   (unsigned long long)token);
}

/* Only called from inside publish_batch, so the slot is still AWAITING. */
void flight_on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    flight *f = arg;
    pthread_mutex_lock(&f->lock);
    slot *s = find_slot(f, token, SLOT_AWAITING);
    if (s) {
        s->native_code = native_code;
        text_copy(s->detail, sizeof s->detail, detail);
    }
    pthread_mutex_unlock(&f->lock);
}

void flight_publish(flight *f, size_t out, const obx_message *msgs, int may_send)
{
    size_t n = 0;
    for (int i = 0; i < f->count; i++) {
        slot *s = &f->slots[i];
        if (s->state != SLOT_AWAITING || s->output != out)
            continue;
        if (!may_send) {
            flight_settle(s, SLOT_NOT_SENT, OBX_UNAVAILABLE, "its output is paused");
            continue;
        }
        f->scratch[n] = msgs[i];
        f->scratch_index[n++] = i;
    }
    if (n == 0)
        return;
    output_instance *oi = &f->outs->out[out];
    pthread_mutex_lock(&f->lock);
    f->awaiting += (int)n; /* completions may arrive inside publish_batch */
    pthread_mutex_unlock(&f->lock);
    for (size_t k = 0; k < n; k++)
        f->accept[k] = OBX_RETRIABLE;
    obx_status rc = oi->host->driver->def.publish_batch(oi->inst, f->scratch, n, f->accept);
    if (rc == OBX_FATAL)
        atomic_store(&oi->broken, 1);
    pthread_mutex_lock(&f->lock);
    for (size_t k = 0; k < n; k++) {
        slot *s = &f->slots[f->scratch_index[k]];
        if (f->accept[k] == OBX_OK || s->state != SLOT_AWAITING)
            continue;
        s->state = SLOT_REFUSED;
        s->status = rc == OBX_FATAL ? OBX_FATAL : f->accept[k];
        if (!s->detail[0])
            text_copy(s->detail, sizeof s->detail,
                      rc == OBX_FATAL ? "driver instance failed" : "refused by the driver");
        f->awaiting--;
    }
    pthread_mutex_unlock(&f->lock);
}

int flight_left(flight *f)
{
    pthread_mutex_lock(&f->lock);
    int left = f->awaiting;
    pthread_mutex_unlock(&f->lock);
    return left;
}

void flight_wait(flight *f, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&f->lock);
    if (f->awaiting > 0)
        pthread_cond_timedwait(&f->done, &f->lock, &until);
    pthread_mutex_unlock(&f->lock);
}

void flight_each_awaiting(flight *f, void (*fn)(void *arg, int index), void *arg)
{
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < f->count; i++)
        if (f->slots[i].state == SLOT_AWAITING)
            fn(arg, i);
    pthread_mutex_unlock(&f->lock);
}

void flight_abort(flight *f, int release)
{
    char *was_awaiting = calloc(f->count ? f->count : 1, 1);
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < f->count; i++)
        was_awaiting[i] = f->slots[i].state == SLOT_AWAITING;
    pthread_mutex_unlock(&f->lock);
    outputs_close_all(f->outs); /* close completes what it still holds, as aborted */
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < f->count; i++) {
        slot *s = &f->slots[i];
        if (s->state == SLOT_AWAITING) /* a driver that broke the contract */
            flight_settle(s, SLOT_DONE, OBX_RETRIABLE, "no completion from the driver");
        if (release && was_awaiting[i] && s->status != OBX_OK)
            s->state = SLOT_ABORTED;
    }
    f->awaiting = 0;
    pthread_mutex_unlock(&f->lock);
    free(was_awaiting);
}
