/* Builds PostgreSQL array literals ({1,2,3}, {"a","b"}) for batched statements. */
#ifndef OBX_PGARRAY_H
#define OBX_PGARRAY_H

#include <stddef.h>

typedef struct pgarray {
    char *buf;
    size_t len, cap;
    size_t count;
} pgarray;

void pgarray_init(pgarray *a);
/* Appends an element; quoted elements are escaped (text), others copied. */
void pgarray_add(pgarray *a, const char *value, int quoted);
/* The literal, valid until the next add or free. */
const char *pgarray_text(pgarray *a);
void pgarray_free(pgarray *a);

#endif
