/* Per-batch scratch memory: blocks reused batch after batch. */
#include "base/arena.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (64 * 1024)

struct arena_block {
    struct arena_block *next;
    size_t used, size;
    max_align_t data[];
};

void *arena_alloc(arena *a, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        b->next = a->head;
        b->used = 0;
        b->size = cap;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

/* Keeps the newest block for the next batch, frees the rest. */
void arena_reset(arena *a)
{
    if (!a->head)
        return;
    struct arena_block *b = a->head->next;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head->next = NULL;
    a->head->used = 0;
}

void arena_free(arena *a)
{
    arena_reset(a);
    free(a->head);
    a->head = NULL;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}
