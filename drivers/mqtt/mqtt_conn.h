/* MQTT driver: the connection (paho callbacks, context = inst) and the timer thread. */
#ifndef OBX_MQTT_CONN_H
#define OBX_MQTT_CONN_H

#include "mqtt_int.h"

void mqtt_on_connect_ok(void *ctx, MQTTAsync_successData5 *resp);
void mqtt_on_connect_fail(void *ctx, MQTTAsync_failureData5 *resp);
void mqtt_on_connection_lost(void *ctx, char *cause);
void mqtt_on_disconnected(void *ctx, MQTTProperties *props, enum MQTTReasonCodes reason);
void *mqtt_timer_main(void *arg);
/* ABI 1.1 probe: connected, or connected within timeout_ms. */
obx_status mqtt_probe(mqtt_inst *inst, int timeout_ms);

#endif
