/* RabbitMQ driver: the ring of unconfirmed publishes, by delivery tag. */
#ifndef OBX_RMQ_CONFIRM_H
#define OBX_RMQ_CONFIRM_H

#include <stddef.h>
#include <stdint.h>

#include "rmq.h"

#define RMQ_HELD_DETAIL "not sent in order: an earlier event of its aggregate failed"

/* The entry of tag, or NULL when it is not in flight. */
rmq_entry *rmq_entry_at(obx_instance *inst, uint64_t tag);
/* Room for one more entry (0), or -1 out of memory. */
int rmq_reserve(obx_instance *inst);
/* Fails the message with tag `tag` and every later in-flight one of its
 * aggregate; returns how many later ones. */
size_t rmq_fail(obx_instance *inst, uint64_t tag, obx_status status, int code, const char *detail);
/* Completes every unconfirmed publish with status. */
void rmq_fail_pending(obx_instance *inst, obx_status status, const char *detail);
/* A basic.ack or basic.nack of tag (multiple: and all before it); returns completions made. */
int rmq_confirm(obx_instance *inst, uint64_t tag, int multiple, int ack);

#endif
