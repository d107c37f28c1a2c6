/* RabbitMQ driver: publishing and reading the broker's answers. */
#ifndef OBX_RMQ_PUBLISH_H
#define OBX_RMQ_PUBLISH_H

#include <stddef.h>

#include "rmq.h"

obx_status rmq_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                             obx_status *accept);
int rmq_pump(obx_instance *inst, int timeout_ms); /* completions made, -1 on connection loss */

#endif
