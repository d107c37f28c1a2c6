/* A place in the cursor's order: (cursor_xid, id). */
#ifndef OBX_CURSOR_PLACE_H
#define OBX_CURSOR_PLACE_H

#include <stdint.h>

typedef struct cursor_place {
    uint64_t xid;
    long long id;
} cursor_place;

#endif
