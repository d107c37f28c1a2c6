/* One worker: its own connection and driver instances, one batch at a time. */
#ifndef OBX_WORKER_H
#define OBX_WORKER_H

#include "engine.h"

typedef struct worker worker;

/* Thread entry: arg is a worker made by worker_new. */
void *worker_main(void *arg);
worker *worker_new(engine *eng, int index);
void worker_free(worker *w);

#endif
