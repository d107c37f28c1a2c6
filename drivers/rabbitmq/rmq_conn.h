/* RabbitMQ driver: the connection, its channels and exchange checks. */
#ifndef OBX_RMQ_CONN_H
#define OBX_RMQ_CONN_H

#include <stddef.h>

#include "rmq.h"

int rmq_connect(obx_instance *inst);          /* 0 or -1 with inst->last_error */
int rmq_ensure_connected(obx_instance *inst); /* respects backoff; 0 when connected */
/* (Re)opens the publishing channel in confirm mode: 0, or -1 with inst->last_error. */
int rmq_open_publishing(obx_instance *inst, amqp_connection_state_t conn);
/* Drops the connection; every unconfirmed publish completes unavailable. */
void rmq_disconnect(obx_instance *inst, const char *why, int graceful);
/* 1 exists, 0 missing (text in why), -1 connection failed */
int rmq_exchange_exists(obx_instance *inst, const char *exchange, size_t len, char *why,
                        size_t why_size);
/* Would a publish to this exchange check it on the broker first (not cached)? */
int rmq_exchange_unchecked(obx_instance *inst, const char *exchange, size_t len);
void rmq_reply_text(amqp_rpc_reply_t r, const char *what, char *buf, size_t size);

#endif
