/* MQTT driver: whose fault a broker's answer is (pure; no paho calls, so a
 * unit test links it alone). */
#ifndef OBX_MQTT_VERDICT_H
#define OBX_MQTT_VERDICT_H

#include "obx/driver.h"

/* A PUBACK/PUBREC reason code >= 0x80: PERMANENT (the event's, for good),
 * UNAVAILABLE (pushback: the broker's state) or RETRIABLE (the event's, may
 * pass later). A 1.0 host gets RETRIABLE for UNAVAILABLE from the caller. */
obx_status mqtt_reason_status(int reason);

/* A publish the broker never acknowledged within publish_timeout_ms. */
obx_status mqtt_timeout_status(void);

#endif
