/* rconsume's `dump` command (rdump.c). */
#ifndef RDUMP_H
#define RDUMP_H

#include <amqp.h>

/* Prints up to expected messages of queue as JSON lines (auto-ack); 0 when all came. */
int rdump(amqp_connection_state_t conn, const char *queue, long expected, int idle_ms);

#endif
