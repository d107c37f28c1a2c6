/*
 * A deliberately broken driver: the runner must catch each defect. Option
 * `defect` selects one: none (a correct asynchronous driver: must pass),
 * double_completion, after_close (completes from a thread after close
 * returned), blocking_publish (publish_batch waits 5.5 s on big batches),
 * shared_state (a global pending list shared by instances), drop_on_close
 * (close forgets in-flight messages), refuse_outside (host->refuse from poll),
 * refuse_accepted (a reason for an accepted message), refuse_twice (two
 * reasons for one refusal), bad_status (an accept status past
 * OBX_STATUS_MAX). And refusing: a correct driver (must pass) that refuses
 * some messages with a reason, some as OBX_UNAVAILABLE, and completes some
 * as OBX_UNAVAILABLE.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "obx/driver.h"

enum {
    DEF_NONE,
    DEF_DOUBLE,
    DEF_AFTER_CLOSE,
    DEF_BLOCKING,
    DEF_SHARED,
    DEF_DROP,
    DEF_REFUSE_OUTSIDE,
    DEF_REFUSE_ACCEPTED,
    DEF_REFUSE_TWICE,
    DEF_BAD_STATUS,
    DEF_REFUSING,
    DEF_COUNT
};
static const char *const brk_defects[DEF_COUNT] = {
    "none",         "double_completion", "after_close",    "blocking_publish",
    "shared_state", "drop_on_close",     "refuse_outside", "refuse_accepted",
    "refuse_twice", "bad_status",        "refusing"};

typedef struct brk_list {
    pthread_mutex_t lock;
    uint64_t *tokens;
    size_t count, cap;
} brk_list;

static brk_list brk_global = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}; /* the shared_state bug */

struct obx_instance {
    const obx_host *host;
    int defect;
    brk_list own;
    brk_list *pending; /* &own, or &brk_global with shared_state */
    int closed;
    pthread_t late;
    int late_started;
};

static const obx_option brk_options[] = {
    {"defect", OBX_OPT_STRING, 0,
     "none, double_completion, after_close, blocking_publish, shared_state, drop_on_close, "
     "refuse_outside, refuse_accepted, refuse_twice, bad_status or refusing"},
    {NULL, 0, 0, NULL},
};

static obx_instance *brk_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    const char *defect = "none";
    host->get_string(host->host_ctx, "defect", &defect);
    int d = 0;
    while (d < DEF_COUNT && strcmp(brk_defects[d], defect) != 0)
        d++;
    if (d == DEF_COUNT) {
        strncpy(errstr, "unknown defect", errstr_size - 1);
        errstr[errstr_size - 1] = '\0';
        return NULL;
    }
    obx_instance *inst = calloc(1, sizeof *inst);
    inst->host = host;
    inst->defect = d;
    pthread_mutex_init(&inst->own.lock, NULL);
    inst->pending = d == DEF_SHARED ? &brk_global : &inst->own;
    return inst;
}

static obx_status brk_publish(obx_instance *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    if (inst->defect == DEF_BLOCKING && count >= 1000) {
        struct timespec ts = {5, 500000000};
        nanosleep(&ts, NULL);
    }
    brk_list *l = inst->pending;
    pthread_mutex_lock(&l->lock);
    if (l->count + count > l->cap) {
        l->cap = (l->count + count) * 2;
        l->tokens = realloc(l->tokens, l->cap * sizeof *l->tokens);
    }
    const obx_host *h = inst->host;
    for (size_t i = 0; i < count; i++) {
        int every10 = i % 10 == 9;
        if (every10 && (inst->defect == DEF_REFUSING || inst->defect == DEF_REFUSE_TWICE)) {
            accept[i] = OBX_PERMANENT;
            h->refuse(h->host_ctx, msgs[i].token, 22, "this message cannot be encoded");
            if (inst->defect == DEF_REFUSE_TWICE)
                h->refuse(h->host_ctx, msgs[i].token, 22, "and again");
            continue;
        }
        if (every10 && inst->defect == DEF_BAD_STATUS) {
            accept[i] = (obx_status)(OBX_STATUS_MAX + 3);
            continue;
        }
        if (i % 10 == 8 && inst->defect == DEF_REFUSING) {
            accept[i] = OBX_UNAVAILABLE; /* no reason needed: it counts nothing */
            continue;
        }
        if (i == 0 && inst->defect == DEF_REFUSE_ACCEPTED)
            h->refuse(h->host_ctx, msgs[i].token, 0, "a reason for an accepted message");
        l->tokens[l->count++] = msgs[i].token;
        accept[i] = OBX_OK;
    }
    pthread_mutex_unlock(&l->lock);
    return OBX_OK;
}

/* Completes everything pending with status; returns how many. */
static size_t brk_complete_all(obx_instance *inst, obx_status status, const char *detail)
{
    brk_list *l = inst->pending;
    pthread_mutex_lock(&l->lock);
    size_t n = l->count;
    for (size_t i = 0; i < n; i++) {
        if (inst->defect == DEF_REFUSE_OUTSIDE && i == 0)
            inst->host->refuse(inst->host->host_ctx, l->tokens[i], 0, "too late for a reason");
        /* an output lost before the acknowledgement: a valid completion */
        obx_status st = inst->defect == DEF_REFUSING && i % 10 == 7 ? OBX_UNAVAILABLE : status;
        inst->host->complete(inst->host->host_ctx, l->tokens[i], st, 0, detail);
        if (inst->defect == DEF_DOUBLE)
            inst->host->complete(inst->host->host_ctx, l->tokens[i], status, 0, detail);
    }
    l->count = 0;
    pthread_mutex_unlock(&l->lock);
    return n;
}

static void brk_poll(obx_instance *inst, int timeout_ms)
{
    (void)timeout_ms;
    brk_complete_all(inst, OBX_OK, NULL);
}

static size_t brk_flush(obx_instance *inst, int timeout_ms)
{
    (void)timeout_ms;
    brk_complete_all(inst, OBX_OK, NULL);
    return 0;
}

static void *brk_late(void *arg)
{
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    brk_complete_all(arg, OBX_RETRIABLE, "aborted late");
    return NULL;
}

static void brk_close(obx_instance *inst)
{
    if (inst->closed)
        return;
    inst->closed = 1;
    if (inst->defect == DEF_AFTER_CLOSE) {
        inst->late_started = pthread_create(&inst->late, NULL, brk_late, inst) == 0;
    } else if (inst->defect == DEF_DROP) {
        inst->pending->count = 0;
    } else {
        brk_complete_all(inst, OBX_RETRIABLE, "aborted");
    }
}

static void brk_destroy(obx_instance *inst)
{
    brk_close(inst);
    if (inst->late_started)
        pthread_join(inst->late, NULL);
    free(inst->own.tokens);
    pthread_mutex_destroy(&inst->own.lock);
    free(inst);
}

static const obx_driver_def brk_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "broken",
    .version = "0.0.1",
    .description = "a driver with selectable contract violations (tests only)",
    .options = brk_options,
    .create = brk_create,
    .publish_batch = brk_publish,
    .poll = brk_poll,
    .flush = brk_flush,
    .close = brk_close,
    .destroy = brk_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &brk_def;
}
