/* MQTT driver: its options, read and checked into the instance. */
#ifndef OBX_MQTT_CONF_H
#define OBX_MQTT_CONF_H

#include <stddef.h>

#include "mqtt_int.h"

extern const obx_option mqtt_options[];
extern const obx_option_spec mqtt_option_specs[];
/* Reads and checks the options into inst; -1 with errstr (never a secret). */
int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size);

#endif
