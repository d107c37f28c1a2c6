/* MQTT 5 drivers: whose fault a broker's answer is (pure: no client library,
 * so a unit test links it alone). drivers/mqtt/README.md, "Whose fault an
 * answer is", is this table in prose. */
#ifndef OBX_MQC_VERDICT_H
#define OBX_MQC_VERDICT_H

#include "obx/driver.h"

/* A PUBACK/PUBREC reason code >= 0x80: PERMANENT (the event's, for good),
 * UNAVAILABLE (pushback: the broker's state) or RETRIABLE (the event's, may
 * pass later). A 1.0 host gets RETRIABLE for UNAVAILABLE from the caller. */
obx_status mqc_reason_status(int reason);

/* A publish the broker never acknowledged within publish_timeout_ms. */
obx_status mqc_timeout_status(void);

/* A CONNACK refusal retrying cannot cure (credentials, client id, banned):
 * create fails with it instead of retrying forever. */
int mqc_connack_fatal(int reason);

#endif
