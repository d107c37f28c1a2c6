/* mosquitto driver: publish_batch. */
#ifndef OBX_MOSQ_PUBLISH_H
#define OBX_MOSQ_PUBLISH_H

#include "mosq_int.h"

obx_status mosq_publish_batch(mosq_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept);

#endif
