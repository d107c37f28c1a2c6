/* The outboxes one process relays (a config's `sources`, or its one outbox),
 * as the metrics endpoint sees them. Only the engine's thread adds and
 * removes; readers hold the lock while they use a state. */
#ifndef OBX_SOURCE_SET_H
#define OBX_SOURCE_SET_H

#include <pthread.h>
#include <stddef.h>

#include "host/relay_state.h"

typedef struct source_set {
    pthread_mutex_t lock;
    relay_state **states;
    size_t count, cap;
    int labelled; /* the config lists sources: /metrics labels each series with its name */
} source_set;

void source_set_init(source_set *set, int labelled);
void source_set_destroy(source_set *set);
void source_set_add(source_set *set, relay_state *st);
/* Once removed, no reader holds st. */
void source_set_remove(source_set *set, relay_state *st);

#endif
