/* mosquitto driver: a message shaped and checked (drivers/mqtt_common) and
 * its MQTT 5 properties as libmosquitto sends them. */
#ifndef OBX_MOSQ_PROPS_H
#define OBX_MOSQ_PROPS_H

#include "mosq_int.h"

/* A message as it is sent: the shape both drivers make, and its properties
 * for mosquitto_publish_v5. mosq_shape_free releases both. */
typedef struct mosq_shape {
    mqc_shape msg;
    mosquitto_property *props;
} mosq_shape;

/* Shapes m: NULL when it can be published (or *nomem: out of memory,
 * retriable), else why it never can be (text valid until the thread's next
 * call). Call mosq_shape_free either way. */
const char *mosq_shape_make(const mosq_inst *inst, const obx_message *m, mosq_shape *sh,
                            int *nomem);
void mosq_shape_free(mosq_shape *sh);

#endif
