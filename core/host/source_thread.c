#include "host/source_thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"

typedef struct source_thread {
    relay_state *st;
    void (*run)(relay_state *st);
    pthread_t thread;
} source_thread;

static void *thread_main(void *arg)
{
    source_thread *t = arg;
    t->run(t->st);
    return NULL;
}

void *source_thread_start(relay_state *st, void (*run)(relay_state *st))
{
    source_thread *t = calloc(1, sizeof *t);
    t->st = st;
    t->run = run;
    pthread_create(&t->thread, NULL, thread_main, t);
    return t;
}

int source_thread_join(void *thread, int ms)
{
    source_thread *t = thread;
    struct timespec until = clock_deadline(ms);
    return pthread_timedjoin_np(t->thread, NULL, &until) == 0;
}

void source_thread_finish(void *thread)
{
    free(thread);
}
