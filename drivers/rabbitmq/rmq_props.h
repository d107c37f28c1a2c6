/* RabbitMQ driver: the AMQP basic properties an output shapes from templates. */
#ifndef OBX_RMQ_PROPS_H
#define OBX_RMQ_PROPS_H

#include <stddef.h>

#include "rmq.h"

/* The option naming each property, in RMQ_P_* order. */
extern const char *const rmq_prop_options[RMQ_P_COUNT];
/* Checks the templates read into inst->props at create: 0, or -1 with errstr. */
int rmq_props_check(obx_instance *inst, char *errstr, size_t errstr_size);
/* Expands them for m into inst->props: 0, or -1 when m can never be sent
 * with them (the reason in why). */
int rmq_props_expand(obx_instance *inst, const obx_message *m, char *why, size_t why_size);
/* The hash a returned message is matched to its publish by (its message_id). */
uint64_t rmq_id_hash(const void *bytes, size_t len);
/* Does the message_id id[0..len) hold event_id? (With the same hash as the
 * one sent for it, it is the one.) */
int rmq_id_holds(const void *id, size_t len, const char *event_id);

#endif
