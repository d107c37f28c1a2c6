/* The places of the transactions in the window, oldest first: when the
 * window confirms up to a transaction (named by its last row's id), the
 * cursor may move to that transaction's place. */
#ifndef OBX_CURSOR_PLACES_H
#define OBX_CURSOR_PLACES_H

#include <stddef.h>

#include "cursor/cursor_read.h"

typedef struct cursor_places {
    cursor_place *ring;
    size_t cap, head, len;
} cursor_places;

void cursor_places_push(cursor_places *q, const cursor_place *at);
/* Drops the places up to the one whose id is end, which goes to *done. */
void cursor_places_confirm(cursor_places *q, uint64_t end, cursor_place *done);
void cursor_places_clear(cursor_places *q);
void cursor_places_free(cursor_places *q);

#endif
