/* One worker: its own database session and driver instances; claims a
 * batch, publishes it, waits for its completions and records them. */
#ifndef OBX_WORKER_H
#define OBX_WORKER_H

#include "host/relay_state.h"

typedef struct worker worker;

worker *worker_new(relay_state *st, int index, const char *payload_type);
void worker_free(worker *w);

/* Thread entry: arg is a worker made by worker_new. */
void *worker_main(void *arg);

/* From the engine's thread during a stop: cancel the worker's running claim
 * (claims_only) or whatever statement it runs (past the deadline). */
void worker_cancel(worker *w, int claims_only);

#endif
