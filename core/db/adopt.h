/* Adopting a table that already holds rows: init-db --from. */
#ifndef OBX_ADOPT_H
#define OBX_ADOPT_H

#include <libpq-fe.h>

#include "config/config.h"

/* What init-db does with the rows of a table it has never set up. */
typedef enum {
    ADOPT_ASK,           /* refuse: the operator says which (--from) */
    ADOPT_FROM_NOW,      /* they are marked published: only new rows are sent */
    ADOPT_FROM_BEGINNING /* they are all sent */
} adopt_from;

/* Before init-db changes anything, in its transaction: refuses a mapping
 * that would break the application's inserts, and a table with rows that
 * init-db never set up unless from says what to do with them. Sets
 * *mark_now when they are to be marked published (adopt_mark_published,
 * once the state columns exist). 0, or -1 with why. */
int adopt_check(PGconn *conn, const relay_config *cfg, adopt_from from, int *mark_now, char *why,
                size_t why_size);

/* --from now: every row still pending is marked published. */
int adopt_mark_published(PGconn *conn, const relay_config *cfg, char *why, size_t why_size);

#endif
