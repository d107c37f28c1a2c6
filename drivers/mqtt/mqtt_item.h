/* MQTT driver: checking a message and copying it into an owned queue item. */
#ifndef OBX_MQTT_ITEM_H
#define OBX_MQTT_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "mqtt_int.h"

/* Checks m and copies it, with its MQTT properties, into *out (agg is its
 * aggregate's hash). Returns NULL when it can be published (*out NULL: out
 * of memory, retriable), else why it never can be (the text lives until the
 * thread's next call; *out NULL). */
const char *mqtt_item_make(const mqtt_inst *inst, const obx_message *m, uint64_t agg,
                           mqtt_item **out);

#endif
