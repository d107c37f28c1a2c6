#include "cursor/cursor_places.h"

#include <stdlib.h>
#include <string.h>

void cursor_places_push(cursor_places *q, const cursor_place *at)
{
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 1024;
        cursor_place *ring = malloc(cap * sizeof *ring);
        for (size_t i = 0; i < q->len; i++)
            ring[i] = q->ring[(q->head + i) % q->cap];
        free(q->ring);
        q->ring = ring;
        q->cap = cap;
        q->head = 0;
    }
    q->ring[(q->head + q->len) % q->cap] = *at;
    q->len++;
}

void cursor_places_confirm(cursor_places *q, uint64_t end, cursor_place *done)
{
    while (q->len > 0) {
        cursor_place at = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        if ((uint64_t)at.id == end) {
            *done = at;
            return;
        }
    }
}

void cursor_places_clear(cursor_places *q)
{
    q->head = q->len = 0;
}

void cursor_places_free(cursor_places *q)
{
    free(q->ring);
    memset(q, 0, sizeof *q);
}
