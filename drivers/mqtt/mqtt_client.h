/* MQTT driver: one paho client per connection (see mqtt_client.c). */
#ifndef OBX_MQTT_CLIENT_H
#define OBX_MQTT_CLIENT_H

#include "mqtt_int.h"

/* Creates a client of generation gen into *out (mu NOT held); 0, or a paho
 * error code. */
int mqtt_client_make(mqtt_inst *inst, int gen, MQTTAsync *out);
/* After a lost connection (timer thread, mu held on entry and exit, released
 * inside): destroys the client retired by the previous loss, retires the
 * current one and makes a fresh one of the other generation. 0 or a paho
 * error code (the current client is kept then). */
int mqtt_client_renew_locked(mqtt_inst *inst);
/* At close (mu NOT held): destroys both clients. */
void mqtt_client_destroy_all(mqtt_inst *inst);

/* A connection callback of a retired client (mu held): to be ignored. */
int mqtt_client_stale_locked(const mqtt_cctx *c);

#endif
