/* mosquitto driver: whose fault a broker's answer is (pure: a unit test
 * links it alone). The mqtt driver's table (drivers/mqtt/mqtt_verdict.c). */
#ifndef OBX_MOSQ_VERDICT_H
#define OBX_MOSQ_VERDICT_H

#include "obx/driver.h"

/* A PUBACK/PUBREC reason code >= 0x80: PERMANENT (the event's, for good),
 * UNAVAILABLE (pushback: the broker's state) or RETRIABLE (the event's, may
 * pass later). A 1.0 host gets RETRIABLE for UNAVAILABLE from the caller. */
obx_status mosq_reason_status(int reason);

/* A CONNACK refusal retrying cannot cure (credentials, client id, banned). */
int mosq_connack_fatal(int reason);

#endif
