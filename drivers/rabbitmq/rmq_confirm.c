/*
 * RabbitMQ driver: the unconfirmed publishes, in a ring indexed by delivery
 * tag, and their completions: an ack completes a message once the earlier
 * ones of its aggregate are done; a failure fails the later ones of its
 * aggregate still in flight (rmq_publish.c says why).
 */
#include <stdlib.h>

#include "rmq_confirm.h"

#define RMQ_RING_MIN 1024

rmq_entry *rmq_entry_at(obx_instance *inst, uint64_t tag)
{
    if (tag < inst->base_tag || tag >= inst->next_tag)
        return NULL;
    return &inst->ring[(inst->head + (size_t)(tag - inst->base_tag)) % inst->cap];
}

/* Room for one more entry; grows the ring (rarely: it keeps its size). */
int rmq_reserve(obx_instance *inst)
{
    size_t used = (size_t)(inst->next_tag - inst->base_tag);
    if (used < inst->cap)
        return 0;
    size_t cap = inst->cap ? inst->cap * 2 : RMQ_RING_MIN;
    rmq_entry *ring = malloc(cap * sizeof(*ring));
    if (!ring)
        return -1;
    for (size_t i = 0; i < used; i++)
        ring[i] = inst->ring[(inst->head + i) % inst->cap];
    free(inst->ring);
    inst->ring = ring;
    inst->cap = cap;
    inst->head = 0;
    return 0;
}

static void rmq_finish(obx_instance *inst, rmq_entry *e, obx_status status, int code,
                       const char *detail)
{
    if (e->done)
        return;
    e->done = 1;
    inst->pending--;
    inst->waiting -= e->acked;
    if (status != OBX_OK) /* the rest of a batch being written must not overtake it */
        (void)obx_held_add(status == rmq_unavailable(inst) ? &inst->held_out : &inst->held,
                           e->aggregate);
    inst->host->complete(inst->host->host_ctx, e->token, status, code, detail);
}

/* Fails the message with tag `tag` and every later in-flight one of its
 * aggregate; returns how many later ones. */
size_t rmq_fail(obx_instance *inst, uint64_t tag, obx_status status, int code, const char *detail)
{
    rmq_entry *e = rmq_entry_at(inst, tag);
    if (!e || e->done)
        return 0;
    uint64_t aggregate = e->aggregate;
    rmq_finish(inst, e, status, code, detail);
    /* behind the output's state, the later ones are the output's state too */
    obx_status behind = status == rmq_unavailable(inst) ? status : OBX_RETRIABLE;
    size_t later_count = 0;
    for (uint64_t t = tag + 1; t < inst->next_tag; t++) {
        rmq_entry *later = rmq_entry_at(inst, t);
        if (!later->done && later->aggregate == aggregate) {
            rmq_finish(inst, later, behind, 0, RMQ_HELD_DETAIL);
            later_count++;
        }
    }
    return later_count;
}

/* Drops completed entries from the front of the ring. */
static void rmq_advance(obx_instance *inst)
{
    while (inst->base_tag < inst->next_tag && inst->ring[inst->head].done) {
        inst->head = (inst->head + 1) % inst->cap;
        inst->base_tag++;
    }
}

void rmq_fail_pending(obx_instance *inst, obx_status status, const char *detail)
{
    for (uint64_t tag = inst->base_tag; tag < inst->next_tag; tag++)
        rmq_finish(inst, rmq_entry_at(inst, tag), status, 0, detail);
    rmq_advance(inst);
}

/* Is a message of this aggregate published before tag still open? */
static int rmq_earlier_open(obx_instance *inst, uint64_t tag, uint64_t aggregate)
{
    for (uint64_t t = inst->base_tag; t < tag; t++) {
        rmq_entry *e = rmq_entry_at(inst, t);
        if (!e->done && e->aggregate == aggregate)
            return 1;
    }
    return 0;
}

/* Completes OK the messages of an aggregate that were acked while an earlier
 * one was open, up to the next one still waiting for its own ack. */
static int rmq_release_later(obx_instance *inst, uint64_t tag, uint64_t aggregate)
{
    int done = 0;
    for (uint64_t t = tag + 1; t < inst->next_tag; t++) {
        rmq_entry *e = rmq_entry_at(inst, t);
        if (e->done || e->aggregate != aggregate)
            continue;
        if (!e->acked)
            break;
        rmq_finish(inst, e, OBX_OK, 0, NULL);
        done++;
    }
    return done;
}

/* A nack with later messages of its aggregate in flight: should the queue
 * take one of them once a consumer makes room, it arrives ahead of the
 * refused one. No later answer tells (the later ones fail with it, and a
 * message taken is in the queue all the same), so the advice is given once. */
static void rmq_warn_refused_run(obx_instance *inst)
{
    if (inst->warned_refused_run)
        return;
    inst->warned_refused_run = 1;
    inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                    "a queue refused a message (nack) with later ones of its aggregate "
                    "in flight: it may take one of those ahead of it once a consumer "
                    "makes room; for a queue that refuses (x-overflow = reject-publish) "
                    "give the output one_per_aggregate = true");
}

int rmq_confirm(obx_instance *inst, uint64_t tag, int multiple, int ack)
{
    int done = 0;
    uint64_t from = multiple ? inst->base_tag : tag;
    if (tag > inst->answered_tag && tag < inst->next_tag)
        inst->answered_tag = tag; /* the channel went past it: rmq_channel.c */
    /* Confirms taken from the oldest open message on find every earlier one
     * done when they reach a message: no look back (it made each ack cost the
     * whole window). */
    int in_turn = from <= inst->base_tag;
    for (uint64_t t = from; t <= tag; t++) {
        rmq_entry *e = rmq_entry_at(inst, t);
        if (!e || e->done)
            continue;
        if (!ack) {
            /* pushback (a full queue with reject-publish, a queue process
             * down): the output's state, not the event's */
            if (rmq_fail(inst, t, rmq_unavailable(inst), 0,
                         "nacked by the broker (a queue refused it: full, or unavailable)") > 0)
                rmq_warn_refused_run(inst);
        } else if (e->return_code) {
            rmq_fail(inst, t, inst->unroutable, e->return_code, e->return_text);
        } else if (!in_turn && rmq_earlier_open(inst, t, e->aggregate)) {
            e->acked = 1; /* completes when its predecessors are done */
            inst->waiting++;
            continue;
        } else {
            rmq_finish(inst, e, OBX_OK, 0, NULL);
            if (inst->waiting > 0)
                done += rmq_release_later(inst, t, e->aggregate);
        }
        done++;
    }
    rmq_advance(inst);
    return done;
}
