/* RabbitMQ driver: its options. */
#ifndef OBX_RMQ_OPTIONS_H
#define OBX_RMQ_OPTIONS_H

#include <stddef.h>

#include "rmq.h"

extern const obx_option rmq_options[];
extern const obx_option_spec rmq_specs[];
int rmq_read_options(obx_instance *inst, char *errstr, size_t errstr_size);
void rmq_free_options(obx_instance *inst);

#endif
