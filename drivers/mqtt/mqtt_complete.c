/*
 * MQTT driver: completions. Every accepted message leaves through here, with
 * inst->mu held, so "exactly once" and "none after close" are proved in one
 * place; an event that fails dooms the later ones of its aggregate.
 */
#include <stdlib.h>

#include "mqtt_complete.h"

void mqtt_doom_later_locked(mqtt_inst *inst, uint64_t agg, uint64_t seq, obx_status status)
{
    /* a follower of an event the broker pushed back is not at fault either */
    obx_status doom = status == OBX_UNAVAILABLE ? OBX_UNAVAILABLE : OBX_RETRIABLE;
    for (int i = 0; i < inst->window; i++) {
        mqtt_slot *s = &inst->slots[i];
        if (s->state != MQTT_SLOT_FREE && s->agg == agg && s->seq > seq && !s->doomed)
            s->doomed = doom;
    }
    for (mqtt_item *it = inst->queue_head; it; it = it->next)
        if (it->agg == agg && it->seq > seq && !it->doomed)
            it->doomed = doom;
}

/* Only flush waits for completions, and only for the last one: a wake-up per
 * acknowledgement cost a context switch per message (the timer thread, which
 * waits on cond, used to be woken by every one). */
static void mqtt_signal_idle_locked(mqtt_inst *inst)
{
    if (inst->inflight == 0 && inst->queued == 0)
        pthread_cond_broadcast(&inst->idle);
}

void mqtt_complete_locked(mqtt_inst *inst, mqtt_slot *slot, obx_status status, int code,
                          const char *detail)
{
    /* PUBACKs come in PUBLISH order, so an earlier event of the aggregate
     * that failed has already marked this one: it must not count as
     * delivered ahead of that event */
    if (slot->doomed && status == OBX_OK) {
        inst->n_out_of_order++;
        status = slot->doomed;
        code = 0;
        detail = "acknowledged after an earlier event of its aggregate failed: sent again after it";
    }
    if (status != OBX_OK)
        mqtt_doom_later_locked(inst, slot->agg, slot->seq, status);
    inst->host->complete(inst->host->host_ctx, slot->token, status, code, detail);
    slot->state = MQTT_SLOT_FREE;
    slot->early[0].used = slot->early[1].used = 0;
    inst->free_idx[inst->free_n++] = (int)(slot - inst->slots);
    inst->inflight--;
    mqtt_signal_idle_locked(inst);
}

void mqtt_complete_item_locked(mqtt_inst *inst, mqtt_item *it, obx_status status, int code,
                               const char *detail)
{
    if (status != OBX_OK)
        mqtt_doom_later_locked(inst, it->agg, it->seq, status);
    inst->host->complete(inst->host->host_ctx, it->token, status, code, detail);
    free(it);
    mqtt_signal_idle_locked(inst);
}

/* Complete every INFLIGHT slot and queued item (mu held). SENDING slots
 * belong to the pump, which finishes them itself when paho returns. */
int mqtt_fail_all_locked(mqtt_inst *inst, obx_status status, const char *detail)
{
    int n = 0;
    for (int i = 0; i < inst->window; i++) {
        if (inst->slots[i].state == MQTT_SLOT_INFLIGHT) {
            mqtt_complete_locked(inst, &inst->slots[i], status, 0, detail);
            n++;
        }
    }
    while (inst->queue_head) {
        mqtt_item *it = inst->queue_head;
        inst->queue_head = it->next;
        inst->queued--;
        mqtt_complete_item_locked(inst, it, status, 0, detail);
        n++;
    }
    inst->queue_tail = NULL;
    return n;
}
