/* MQTT driver: completing publishes, the one way a message leaves the driver. */
#ifndef OBX_MQTT_COMPLETE_H
#define OBX_MQTT_COMPLETE_H

#include "mqtt_int.h"

/* Complete a slot (inst->mu held): host->complete, free the slot, signal
 * idle when nothing is left. */
void mqtt_complete_locked(mqtt_inst *inst, mqtt_slot *slot, obx_status status, int code,
                          const char *detail);
/* Complete a queued item (inst->mu held, item already unlinked) and free it. */
void mqtt_complete_item_locked(mqtt_inst *inst, mqtt_item *it, obx_status status, int code,
                               const char *detail);
/* After a failure (status) of (agg, seq): later events of agg in flight or
 * queued must not be OK; they fail UNAVAILABLE after pushback, else RETRIABLE. */
void mqtt_doom_later_locked(mqtt_inst *inst, uint64_t agg, uint64_t seq, obx_status status);
/* Completes every INFLIGHT slot and every queued item with status and detail
 * (mu held); returns how many. */
int mqtt_fail_all_locked(mqtt_inst *inst, obx_status status, const char *detail);

#endif
