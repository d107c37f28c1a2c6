#include "deliver/flight.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"

/* A token's key: bit 31 the lane, 30..0 the slot (a batch holds at most
 * 100,000 messages); its check: the batch number. */
#define KEY_LANE_BIT 31
#define KEY_INDEX_MASK ((1u << KEY_LANE_BIT) - 1)

void flights_init(flights *fs, int capacity, delivery *dl, const char *scope)
{
    memset(fs, 0, sizeof *fs);
    fs->dl = dl;
    fs->scope = scope;
    pthread_mutex_init(&fs->lock, NULL);
    pthread_cond_init(&fs->done, NULL);
    atomic_init(&fs->late, 0);
    for (unsigned k = 0; k < FLIGHT_LANES; k++) {
        flight *f = &fs->lane[k];
        f->set = fs;
        f->lane = k;
        f->slots = calloc(capacity, sizeof *f->slots);
        f->scratch = calloc(capacity, sizeof *f->scratch);
        f->scratch_ext = calloc(capacity, sizeof *f->scratch_ext);
        f->scratch_index = calloc(capacity, sizeof *f->scratch_index);
        f->accept = calloc(capacity, sizeof *f->accept);
        f->refusal = calloc(capacity, sizeof *f->refusal);
    }
}

void flights_free(flights *fs)
{
    for (unsigned k = 0; k < FLIGHT_LANES; k++) {
        flight *f = &fs->lane[k];
        free(f->slots);
        free(f->scratch);
        free(f->scratch_ext);
        free(f->scratch_index);
        free(f->accept);
        free(f->refusal);
    }
    pthread_mutex_destroy(&fs->lock);
    pthread_cond_destroy(&fs->done);
}

void flight_begin(flight *f, int count)
{
    pthread_mutex_lock(&f->set->lock);
    f->seq++;
    f->count = count;
    f->awaiting = 0;
    f->offered = 0;
    f->active = 1;
    memset(f->slots, 0, count * sizeof *f->slots);
    pthread_mutex_unlock(&f->set->lock);
}

void flight_end(flight *f)
{
    pthread_mutex_lock(&f->set->lock);
    f->active = 0;
    pthread_mutex_unlock(&f->set->lock);
}

uint64_t flight_token(const flight *f, int index)
{
    return delivery_token((uint64_t)f->lane << KEY_LANE_BIT | (uint32_t)index, f->seq);
}

void flight_settle(slot *s, slot_state state, obx_status status, const char *detail)
{
    s->state = state;
    s->status = status;
    text_copy(s->detail, sizeof s->detail, detail);
}

verdict flight_verdict(const slot *s)
{
    static const verdict_kind kinds[] = {
        [SLOT_AWAITING] = VERDICT_COMPLETED, [SLOT_DONE] = VERDICT_COMPLETED,
        [SLOT_REFUSED] = VERDICT_REFUSED,    [SLOT_ABORTED] = VERDICT_ABORTED,
        [SLOT_BAD] = VERDICT_BAD_ROW,        [SLOT_NOT_SENT] = VERDICT_NOT_SENT,
        [SLOT_DROPPED] = VERDICT_DROPPED,
    };
    return (verdict){kinds[s->state], s->status, s->native_code, s->detail};
}

/* The lane and slot a token names, if it is awaiting a completion of the
 * lane's current batch. Caller holds the lock. */
static slot *find_awaiting(flights *fs, uint64_t key, uint32_t check, flight **in)
{
    flight *f = &fs->lane[(key >> KEY_LANE_BIT) & 1];
    uint32_t index = (uint32_t)key & KEY_INDEX_MASK;
    if (!f->active || check != (f->seq & DELIVERY_CHECK_MASK) || index >= (uint32_t)f->count ||
        f->slots[index].state != SLOT_AWAITING)
        return NULL;
    *in = f;
    return &f->slots[index];
}

void flight_on_complete(void *arg, uint64_t key, uint32_t check, obx_status status, int native_code,
                        const char *detail)
{
    flights *fs = arg;
    flight *f;
    pthread_mutex_lock(&fs->lock);
    slot *s = find_awaiting(fs, key, check, &f);
    if (s) {
        s->state = SLOT_DONE;
        s->status = status;
        s->native_code = native_code;
        text_copy(s->detail, sizeof s->detail, detail);
        if (status == OBX_FATAL)
            atomic_store(&fs->dl->outs.out[s->output].broken, 1);
        int first = f->offered - f->awaiting == 0;
        if (--f->awaiting == 0 || first || status == OBX_FATAL)
            pthread_cond_signal(&fs->done);
    }
    pthread_mutex_unlock(&fs->lock);
    if (s || atomic_fetch_sub(&fs->late, 1) > 0)
        return; /* or one given back, completed late */
    atomic_fetch_add(&fs->late, 1);
    log_scoped(OBX_LOG_WARN, fs->scope,
               "driver completed an unknown or finished message (token %llx): ignored",
               (unsigned long long)delivery_token(key, check));
}

void flight_publish(flight *f, size_t out, const obx_message *msgs, const obx_message_ext *ext,
                    int may_send)
{
    flights *fs = f->set;
    size_t n = 0;
    for (int i = 0; i < f->count; i++) {
        slot *s = &f->slots[i];
        if (s->state != SLOT_AWAITING || s->output != out)
            continue;
        if (!may_send) {
            flight_settle(s, SLOT_NOT_SENT, OBX_UNAVAILABLE, "its output is paused");
            continue;
        }
        s->offered = 1;
        f->scratch[n] = msgs[i];
        if (ext)
            f->scratch_ext[n] = ext[i];
        f->scratch_index[n++] = i;
    }
    if (n == 0)
        return;
    pthread_mutex_lock(&fs->lock);
    f->awaiting += (int)n; /* completions may arrive inside publish_batch */
    f->offered += (int)n;
    pthread_mutex_unlock(&fs->lock);
    if (delivery_publish(fs->dl, out, f->scratch, ext ? f->scratch_ext : NULL, n, f->accept,
                         f->refusal) == n)
        return;
    pthread_mutex_lock(&fs->lock);
    for (size_t k = 0; k < n; k++) {
        slot *s = &f->slots[f->scratch_index[k]];
        if (f->accept[k] == OBX_OK || s->state != SLOT_AWAITING)
            continue;
        s->state = SLOT_REFUSED;
        s->status = f->accept[k];
        text_copy(s->detail, sizeof s->detail, f->refusal[k]);
        f->awaiting--;
    }
    pthread_mutex_unlock(&fs->lock);
}

int flight_give_back(flight *f, const char *reason)
{
    flights *fs = f->set;
    int n = 0;
    pthread_mutex_lock(&fs->lock);
    for (int i = 0; f->active && i < f->count; i++)
        if (f->slots[i].state == SLOT_AWAITING) {
            flight_settle(&f->slots[i], SLOT_DONE, OBX_UNAVAILABLE, reason);
            f->scratch_index[n++] = i;
        }
    f->awaiting = 0;
    atomic_fetch_add(&fs->late, n);
    pthread_mutex_unlock(&fs->lock);
    for (int k = 0; k < n; k++)
        outputs_stall(&fs->dl->outs, f->slots[f->scratch_index[k]].output);
    return n;
}

int flight_left(flight *f)
{
    pthread_mutex_lock(&f->set->lock);
    int left = f->awaiting;
    pthread_mutex_unlock(&f->set->lock);
    return left;
}

int flight_answered(flight *f)
{
    pthread_mutex_lock(&f->set->lock);
    int answered = f->offered > f->awaiting;
    pthread_mutex_unlock(&f->set->lock);
    return answered;
}

/* Has an active lane nothing left due? Caller holds the lock. */
static int a_lane_done(const flights *fs)
{
    for (unsigned k = 0; k < FLIGHT_LANES; k++)
        if (fs->lane[k].active && fs->lane[k].awaiting == 0)
            return 1;
    return 0;
}

void flights_wait(flights *fs, int ms)
{
    struct timespec until = clock_deadline(ms);
    pthread_mutex_lock(&fs->lock);
    if (!a_lane_done(fs))
        pthread_cond_timedwait(&fs->done, &fs->lock, &until);
    pthread_mutex_unlock(&fs->lock);
}

void flights_abort(flights *fs, int release)
{
    char *was_awaiting[FLIGHT_LANES];
    pthread_mutex_lock(&fs->lock);
    for (unsigned k = 0; k < FLIGHT_LANES; k++) {
        flight *f = &fs->lane[k];
        was_awaiting[k] = calloc(f->count ? f->count : 1, 1);
        for (int i = 0; f->active && i < f->count; i++)
            was_awaiting[k][i] = f->slots[i].state == SLOT_AWAITING;
    }
    pthread_mutex_unlock(&fs->lock);
    outputs_close_all(&fs->dl->outs); /* close completes what it still holds, as aborted */
    pthread_mutex_lock(&fs->lock);
    for (unsigned k = 0; k < FLIGHT_LANES; k++) {
        flight *f = &fs->lane[k];
        for (int i = 0; f->active && i < f->count; i++) {
            slot *s = &f->slots[i];
            if (s->state == SLOT_AWAITING) /* a driver that broke the contract */
                flight_settle(s, SLOT_DONE, OBX_RETRIABLE, "no completion from the driver");
            if (release && was_awaiting[k][i] && s->status != OBX_OK)
                s->state = SLOT_ABORTED;
        }
        f->awaiting = 0;
        free(was_awaiting[k]);
    }
    pthread_mutex_unlock(&fs->lock);
}
