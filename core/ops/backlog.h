/* The backlog poller: one thread (and one connection) that reads what an
 * operator paused each second (control.h) and, with metrics on, counts
 * pending, leased and dead rows and the oldest pending row's age every few
 * seconds, for /metrics and /readyz; a scrape never touches the database. */
#ifndef OBX_BACKLOG_H
#define OBX_BACKLOG_H

#include "host/relay_state.h"

#define BACKLOG_POLL_MS 5000

/* Thread entry: arg is the relay_state; returns after a stop. */
void *backlog_main(void *arg);

#endif
