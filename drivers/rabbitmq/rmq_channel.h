/* RabbitMQ driver: the broker closing the publishing channel for one event. */
#ifndef OBX_RMQ_CHANNEL_H
#define OBX_RMQ_CHANNEL_H

#include <stdint.h>

#include "rmq.h"

/* The broker closed the publishing channel with code and text (close-ok sent):
 * completes every unconfirmed message and opens the channel again. 0, or -1
 * when that failed (inst->last_error says why; the caller disconnects). */
int rmq_channel_closed(obx_instance *inst, uint16_t code, const char *text);
/* The hash rmq_channel.c knows an event by. */
uint64_t rmq_event_hash(const char *event_id);
/* Is this event one the channel may have closed for (to be sent alone)? */
int rmq_suspect(const obx_instance *inst, uint64_t event);
void rmq_suspect_remove(obx_instance *inst, uint64_t event);

#endif
