/* The dead_letter output (config dead_letter = { output; destination; }):
 * a thread of `run` that publishes every dead event to that output once
 * more, with why it died, and remembers in <table>_dead_forwarded what the
 * output acknowledged. The events' state, `requeue` and `purge` are
 * untouched, and the thread has its own session and driver instance: a
 * dead_letter output that is down or slow never holds up the outputs the
 * workers publish to; what it missed goes out once it is back. */
#ifndef OBX_DEAD_FORWARD_H
#define OBX_DEAD_FORWARD_H

#include "host/relay_state.h"

/* The thread (arg: the relay_state); returns once a stop is requested and
 * what was in flight is settled (up to relay.shutdown_timeout_ms). */
void *dead_forward_main(void *arg);

#endif
