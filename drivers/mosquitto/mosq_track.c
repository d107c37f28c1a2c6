/*
 * mosquitto driver: the publishes in flight, a ring in send order. The
 * broker acknowledges QoS 1/2 publishes of one connection in the order it
 * received them, so a PUBACK is nearly always for the head; completed
 * entries leave the ring once they reach the head.
 */
#include <stdlib.h>
#include <string.h>

#include "mosq_track.h"

#define MOSQ_TRACK_MIN 256

static mosq_entry *mosq_at(mosq_track *t, size_t i)
{
    return &t->e[(t->head + i) % t->cap];
}

int mosq_track_push(mosq_inst *inst, uint64_t token, uint64_t agg, int mid, int64_t deadline_ms)
{
    mosq_track *t = &inst->track;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : MOSQ_TRACK_MIN;
        mosq_entry *e = malloc(cap * sizeof *e);
        if (!e)
            return -1;
        for (size_t i = 0; i < t->n; i++)
            e[i] = *mosq_at(t, i);
        free(t->e);
        t->e = e;
        t->cap = cap;
        t->head = 0;
    }
    *mosq_at(t, t->n++) = (mosq_entry){token, agg, deadline_ms, mid, 0, OBX_OK};
    t->live++;
    return 0;
}

mosq_entry *mosq_track_find(mosq_inst *inst, int mid)
{
    mosq_track *t = &inst->track;
    for (size_t i = 0; i < t->n; i++) {
        mosq_entry *e = mosq_at(t, i);
        if (!e->done && e->mid == mid)
            return e;
    }
    return NULL;
}

mosq_entry *mosq_track_oldest(mosq_inst *inst)
{
    mosq_track *t = &inst->track;
    for (size_t i = 0; i < t->n; i++) {
        mosq_entry *e = mosq_at(t, i);
        if (!e->done)
            return e;
    }
    return NULL;
}

/* After a failure of e, the later live entries of its aggregate must not be
 * OK: UNAVAILABLE after pushback (not their fault either), else RETRIABLE. */
static void mosq_doom_later(mosq_track *t, const mosq_entry *e, obx_status status)
{
    obx_status doom = status == OBX_UNAVAILABLE ? OBX_UNAVAILABLE : OBX_RETRIABLE;
    size_t i = (size_t)(e - t->e + (ptrdiff_t)t->cap - (ptrdiff_t)t->head) % t->cap;
    for (i++; i < t->n; i++) {
        mosq_entry *l = mosq_at(t, i);
        if (!l->done && l->agg == e->agg && !l->doomed)
            l->doomed = doom;
    }
}

void mosq_track_complete(mosq_inst *inst, mosq_entry *e, obx_status status, int code,
                         const char *detail)
{
    mosq_track *t = &inst->track;
    if (e->doomed && status == OBX_OK) {
        status = e->doomed;
        code = 0;
        detail = "acknowledged after an earlier event of its aggregate failed: sent again after it";
    }
    if (status == OBX_OK)
        inst->n_ok++;
    else {
        inst->n_failed++;
        mosq_doom_later(t, e, status);
    }
    inst->host->complete(inst->host->host_ctx, e->token, status, code, detail);
    e->done = 1;
    t->live--;
    while (t->n > 0 && t->e[t->head].done) {
        t->head = (t->head + 1) % t->cap;
        t->n--;
    }
    if (t->live == 0)
        pthread_cond_broadcast(&inst->idle);
}

int mosq_track_fail_all(mosq_inst *inst, obx_status status, const char *detail)
{
    mosq_track *t = &inst->track;
    int n = 0;
    while (t->live > 0) {
        mosq_entry *e = mosq_track_oldest(inst);
        mosq_track_complete(inst, e, status, 0, detail);
        n++;
    }
    return n;
}

void mosq_track_free(mosq_track *t)
{
    free(t->e);
    memset(t, 0, sizeof *t);
}
