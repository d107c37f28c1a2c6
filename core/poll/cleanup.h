/* Retention: deletes published rows past the horizon in the background. */
#ifndef OBX_CLEANUP_H
#define OBX_CLEANUP_H

#include "host/relay_state.h"

/* Thread entry: arg is the relay_state; returns when a stop is requested. */
void *cleanup_main(void *arg);

#endif
