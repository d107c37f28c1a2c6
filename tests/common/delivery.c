/* The delivery checker: see delivery.h. */
#include "delivery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A byte string -> int64 map, open addressing, grown at half full. */
typedef struct smap {
    char **keys;
    size_t *lens;
    int64_t *vals;
    size_t cap, count;
} smap;

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static size_t smap_slot(const smap *m, const char *key, size_t len)
{
    size_t i = hash(key, len) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == len && memcmp(m->keys[i], key, len) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void smap_resize(smap *m, size_t cap)
{
    smap old = *m;
    m->cap = cap;
    m->keys = calloc(cap, sizeof *m->keys);
    m->lens = calloc(cap, sizeof *m->lens);
    m->vals = calloc(cap, sizeof *m->vals);
    if (!m->keys || !m->lens || !m->vals) {
        fprintf(stderr, "delivery: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.keys[i])
            continue;
        size_t s = smap_slot(m, old.keys[i], old.lens[i]);
        m->keys[s] = old.keys[i];
        m->lens[s] = old.lens[i];
        m->vals[s] = old.vals[i];
    }
    free(old.keys);
    free(old.lens);
    free(old.vals);
}

/* The value for KEY, inserted as 0 when new (*isnew says which). */
static int64_t *smap_get(smap *m, const char *key, size_t len, int *isnew)
{
    if ((m->count + 1) * 2 > m->cap)
        smap_resize(m, m->cap ? 2 * m->cap : 1024);
    size_t s = smap_slot(m, key, len);
    *isnew = !m->keys[s];
    if (*isnew) {
        m->keys[s] = malloc(len ? len : 1);
        memcpy(m->keys[s], key, len);
        m->lens[s] = len;
        m->vals[s] = 0;
        m->count++;
    }
    return &m->vals[s];
}

static void smap_free(smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
}

struct delivery {
    const char *name;
    smap ids;     /* event id -> 1 */
    smap highest; /* aggregate -> highest sequence delivered */
    size_t received, duplicates, order_breaks;
};

delivery *delivery_new(const char *name)
{
    delivery *d = calloc(1, sizeof *d);
    d->name = name;
    return d;
}

void delivery_free(delivery *d)
{
    if (!d)
        return;
    smap_free(&d->ids);
    smap_free(&d->highest);
    free(d);
}

delivery_verdict delivery_add(delivery *d, const char *event_id, size_t id_len,
                              const char *aggregate, size_t aggregate_len, int64_t seq)
{
    int isnew;
    d->received++;
    smap_get(&d->ids, event_id, id_len, &isnew);
    if (!isnew) {
        d->duplicates++;
        return DELIVERY_DUPLICATE;
    }
    if (seq < 0)
        return DELIVERY_FIRST;
    int64_t *highest = smap_get(&d->highest, aggregate, aggregate_len, &isnew);
    if (!isnew && seq <= *highest) {
        if (d->order_breaks++ < 10)
            fprintf(stderr, "%s: aggregate %.*s: n=%lld after n=%lld\n", d->name,
                    (int)aggregate_len, aggregate, (long long)seq, (long long)*highest);
        return DELIVERY_OUT_OF_ORDER;
    }
    *highest = seq;
    return DELIVERY_FIRST;
}

size_t delivery_received(const delivery *d)
{
    return d->received;
}

size_t delivery_unique(const delivery *d)
{
    return d->ids.count;
}

size_t delivery_duplicates(const delivery *d)
{
    return d->duplicates;
}

size_t delivery_order_breaks(const delivery *d)
{
    return d->order_breaks;
}

size_t delivery_aggregates(const delivery *d)
{
    return d->highest.count;
}

size_t delivery_lost(const delivery *d, size_t expected)
{
    return expected > d->ids.count ? expected - d->ids.count : 0;
}
