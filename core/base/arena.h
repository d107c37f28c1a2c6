/* Per-batch scratch memory: reset, never freed piecemeal. */
#ifndef OBX_ARENA_H
#define OBX_ARENA_H

#include <stddef.h>

typedef struct arena {
    struct arena_block *head;
} arena;

/* size bytes aligned for any type; never NULL. */
void *arena_alloc(arena *a, size_t size);
/* A NUL-terminated copy of s[0..n). */
char *arena_strndup(arena *a, const char *s, size_t n);
void arena_reset(arena *a);
void arena_free(arena *a);

#endif
