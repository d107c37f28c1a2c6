/* mosquitto driver: checking a message and shaping it into MQTT 5 properties. */
#ifndef OBX_MOSQ_CHECK_H
#define OBX_MOSQ_CHECK_H

#include <stddef.h>

#include "mosq_int.h"

/* NULL when the topic can be published, else why not. */
const char *mosq_topic_problem(const char *topic);

/* A message as it is sent: its properties and body (the message's payload,
 * or a structured CloudEvent's JSON). mosq_shape_free releases both. */
typedef struct mosq_shape {
    mosquitto_property *props;
    const void *body;
    size_t body_len;
    obx_ce_event ce;
} mosq_shape;

/* Shapes m: NULL when it can be published (or *nomem: out of memory,
 * retriable), else why it never can be (text valid until the thread's next
 * call). Call mosq_shape_free either way. */
const char *mosq_shape_make(const mosq_inst *inst, const obx_message *m, mosq_shape *sh,
                            int *nomem);
void mosq_shape_free(mosq_shape *sh);

#endif
