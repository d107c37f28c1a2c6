/* MQTT driver: checking a message and copying it into an owned queue item. */
#ifndef OBX_MQTT_ITEM_H
#define OBX_MQTT_ITEM_H

#include <stddef.h>

#include "mqtt_int.h"

/* NULL when the message can be published, else why it never can be (the
 * text lives until the thread's next call). */
const char *mqtt_message_problem(const mqtt_inst *inst, const obx_message *m);
/* An owned copy of m with its MQTT properties, or NULL (out of memory). */
mqtt_item *mqtt_item_new(const mqtt_inst *inst, const obx_message *m);
/* NULL when the topic can be published, else why not. */
const char *mqtt_topic_problem(const char *topic);
int mqtt_utf8_ok(const unsigned char *s, size_t len);

#endif
