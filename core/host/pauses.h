/* What an operator paused (`outbox-relay pause`, the admin endpoint): the
 * whole source, or outputs by name, as the control table said when the
 * backlog poller last read it. Shared by every thread; survives reloads
 * (outputs are named, not numbered). */
#ifndef OBX_PAUSES_H
#define OBX_PAUSES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* A paused output's events wait this long before they are offered again
 * (poll mode writes each such row once per wait). */
#define PAUSED_DEFER_MS 5000

typedef struct pauses {
    atomic_int source; /* 1: nothing is sent at all */
    atomic_int any;    /* 1: some output is paused (so lookups are skipped when none is) */
    pthread_mutex_t lock;
    char *outputs; /* paused output names, each ended by '\n'; NULL: none */
} pauses;

void pauses_init(pauses *p);
void pauses_destroy(pauses *p);

/* Replaces the set: source paused or not, and the names (count of them). */
void pauses_set(pauses *p, int source, const char *const *names, size_t count);

/* Is the named output paused, or the source? */
int pauses_output(pauses *p, const char *name);

#endif
