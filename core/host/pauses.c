#include "host/pauses.h"

#include <stdlib.h>
#include <string.h>

void pauses_init(pauses *p)
{
    atomic_init(&p->source, 0);
    atomic_init(&p->any, 0);
    pthread_mutex_init(&p->lock, NULL);
    p->outputs = NULL;
}

void pauses_destroy(pauses *p)
{
    free(p->outputs);
    p->outputs = NULL;
    pthread_mutex_destroy(&p->lock);
}

void pauses_set(pauses *p, int source, const char *const *names, size_t count)
{
    size_t size = 1;
    for (size_t i = 0; i < count; i++)
        size += strlen(names[i]) + 1;
    char *list = NULL;
    if (count) {
        list = malloc(size);
        char *at = list;
        for (size_t i = 0; i < count; i++) {
            size_t n = strlen(names[i]);
            memcpy(at, names[i], n);
            at[n] = '\n';
            at += n + 1;
        }
        *at = '\0';
    }
    pthread_mutex_lock(&p->lock);
    char *old = p->outputs;
    p->outputs = list;
    atomic_store(&p->any, count > 0);
    atomic_store(&p->source, source != 0);
    pthread_mutex_unlock(&p->lock);
    free(old);
}

int pauses_output(pauses *p, const char *name)
{
    if (atomic_load(&p->source))
        return 1;
    if (!atomic_load(&p->any))
        return 0;
    size_t n = strlen(name);
    int found = 0;
    pthread_mutex_lock(&p->lock);
    for (const char *at = p->outputs; at && *at && !found; at = strchr(at, '\n') + 1)
        found = strncmp(at, name, n) == 0 && at[n] == '\n';
    pthread_mutex_unlock(&p->lock);
    return found;
}
