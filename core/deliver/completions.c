#include "deliver/completions.h"

#include <stdlib.h>

#include "base/clock.h"
#include "base/text.h"

void completions_init(completions *in)
{
    *in = (completions){0};
    pthread_mutex_init(&in->lock, NULL);
    pthread_cond_init(&in->arrived, NULL);
}

void completions_free(completions *in)
{
    free(in->items);
    free(in->taken);
    pthread_mutex_destroy(&in->lock);
    pthread_cond_destroy(&in->arrived);
}

void completions_put(void *arg, uint64_t key, uint32_t check, obx_status status, int native_code,
               const char *detail)
{
    completions *in = arg;
    pthread_mutex_lock(&in->lock);
    if (in->len == in->cap) {
        in->cap = in->cap ? in->cap * 2 : 1024;
        in->items = realloc(in->items, in->cap * sizeof *in->items);
    }
    completion *d = &in->items[in->len++];
    d->key = key;
    d->check = check;
    d->status = status;
    d->native_code = native_code;
    text_copy(d->detail, sizeof d->detail, detail);
    pthread_cond_signal(&in->arrived);
    pthread_mutex_unlock(&in->lock);
}

const completion *completions_take(completions *in, size_t *count)
{
    /* two buffers swapped: the producers fill one while the owner reads the other */
    pthread_mutex_lock(&in->lock);
    completion *t = in->taken;
    size_t cap = in->taken_cap;
    *count = in->len;
    in->taken = in->items;
    in->taken_cap = in->cap;
    in->items = t;
    in->cap = cap;
    in->len = 0;
    pthread_mutex_unlock(&in->lock);
    return in->taken;
}

void completions_wait(completions *in, int ms)
{
    struct timespec until = clock_deadline(ms);
    pthread_mutex_lock(&in->lock);
    if (in->len == 0)
        pthread_cond_timedwait(&in->arrived, &in->lock, &until);
    pthread_mutex_unlock(&in->lock);
}
