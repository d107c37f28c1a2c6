/* init-db turning an existing plain outbox into a partitioned one
 * (relay.partitions): the old table becomes the partition of everything
 * before two spans from now, <table>_p_before, under its rows. */
#ifndef OBX_PARTITION_CONVERT_H
#define OBX_PARTITION_CONVERT_H

#include <libpq-fe.h>

#include "config/config.h"

/* Outside a transaction, while producers go on writing: a CHECK of the
 * partition's bound added NOT VALID and validated, the new key's index and
 * a plain event_id index built concurrently. Fills bound (a literal) for
 * the swap. Returns 0 or -1 with why. */
int partition_convert_prepare(PGconn *conn, const relay_config *cfg, char *bound, size_t bound_size,
                              char *why, size_t why_size);

/* In init-db's transaction, under ACCESS EXCLUSIVE on the table until it
 * commits: the old table renamed, stripped of its triggers and identity,
 * a partitioned table made like it (the identity going on from the old
 * sequence, its grants given again) and the old one attached. Returns 0
 * or -1 with why. */
int partition_convert_swap(PGconn *conn, const relay_config *cfg, const char *bound, char *why,
                           size_t why_size);

/* After a failed swap (rolled back): the plain table's bound CHECK
 * dropped, so that inserts past it do not fail once its time comes. */
void partition_convert_undo(PGconn *conn, const relay_config *cfg);

#endif
