/* mosquitto driver: the client (mosq_client.c) and the loop thread that owns
 * the network (mosq_loop.c). */
#ifndef OBX_MOSQ_LOOP_H
#define OBX_MOSQ_LOOP_H

#include <stddef.h>

#include "mosq_int.h"
#include "mqc_clock.h"

/* Once per process: mosquitto_lib_init. */
void mosq_lib_init(void);
/* A fresh client for inst with every option and callback set; NULL with errstr. */
struct mosquitto *mosq_client_new(mosq_inst *inst, char *errstr, size_t errstr_size);

/* The loop thread: connects with backoff, runs the network, times out
 * publishes, replaces the client after a lost connection; exits on stopping. */
void *mosq_loop_main(void *arg);
/* ABI 1.1 probe: connected, or connected within timeout_ms. */
obx_status mosq_probe(mosq_inst *inst, int timeout_ms);

#endif
