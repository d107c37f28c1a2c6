#include "host/source_set.h"

#include <stdlib.h>

void source_set_init(source_set *set, int labelled)
{
    pthread_mutex_init(&set->lock, NULL);
    set->states = NULL;
    set->count = set->cap = 0;
    set->labelled = labelled;
}

void source_set_destroy(source_set *set)
{
    free(set->states);
    pthread_mutex_destroy(&set->lock);
}

void source_set_add(source_set *set, relay_state *st)
{
    pthread_mutex_lock(&set->lock);
    if (set->count == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 4;
        set->states = realloc(set->states, set->cap * sizeof *set->states);
    }
    set->states[set->count++] = st;
    pthread_mutex_unlock(&set->lock);
}

void source_set_remove(source_set *set, relay_state *st)
{
    pthread_mutex_lock(&set->lock);
    for (size_t i = 0; i < set->count; i++)
        if (set->states[i] == st) { /* the rest keep their order on /metrics */
            for (size_t j = i + 1; j < set->count; j++)
                set->states[j - 1] = set->states[j];
            set->count--;
            break;
        }
    pthread_mutex_unlock(&set->lock);
}
