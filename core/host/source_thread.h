/* A source that runs on one thread of its own (WAL mode's stream, the
 * cursor source's reader): its start, join and finish (source.h). */
#ifndef OBX_SOURCE_THREAD_H
#define OBX_SOURCE_THREAD_H

#include "host/relay_state.h"

/* Runs run(st) on a new thread; the handle is the source's run. */
void *source_thread_start(relay_state *st, void (*run)(relay_state *st));
/* source_kind.join and .finish for it. */
int source_thread_join(void *thread, int ms);
void source_thread_finish(void *thread);

#endif
