/* MQTT driver: publishing and the acknowledgements of publishes. */
#ifndef OBX_MQTT_PUBLISH_H
#define OBX_MQTT_PUBLISH_H

#include <stddef.h>

#include "mqtt_int.h"

/* Hands queued messages to paho while the window has room (any thread, mu NOT held). */
void mqtt_pump(mqtt_inst *inst);
obx_status mqtt_publish_batch(mqtt_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept);

#endif
