/* RabbitMQ driver: limits a message must fit before anything of it is sent. */
#ifndef OBX_RMQ_LIMITS_H
#define OBX_RMQ_LIMITS_H

#include <stddef.h>

#include "rmq.h"

/* Every short string of the publish fits AMQP's 255 bytes (1), else 0 with why. */
int rmq_names_fit(const obx_instance *inst, const obx_message *m, amqp_bytes_t exchange,
                  amqp_bytes_t routing_key, char *why, size_t why_size);
/* The properties fit one header frame of the negotiated frame_max (1), else 0 with why. */
int rmq_properties_fit(const obx_instance *inst, const amqp_basic_properties_t *p, char *why,
                       size_t why_size);

#endif
