/* The dead-letter table (<table>_dead_letter): dead events kept out of the
 * outbox. WAL mode writes every dead event there; poll mode moves there the
 * dead rows of a partition it retires (relay.partitions). requeue sends
 * them back through the outbox. */
#ifndef OBX_DEAD_LETTER_H
#define OBX_DEAD_LETTER_H

#include <libpq-fe.h>

#include "config/config.h"

/* The table and its index, as init-db steps (idempotent). */
extern const char *const dead_letter_steps[];
extern const size_t dead_letter_step_count;

/* Inside the caller's transaction: inserts the requeuable dead letters
 * (all, or those of the event ids in ids_array, a uuid[] literal) into the
 * outbox as new rows and deletes them. WAL mode's (retired = 0) first
 * removes the rows kept for audit under the same event ids; poll mode's
 * (retired = 1) came from retired partitions, so they get created_at = now()
 * (their partition is gone) and nothing else is touched. Returns how many
 * were requeued, *kept those that cannot be (stored raw, or lacking a
 * field), or -1 with err. */
long long dead_letter_requeue(PGconn *conn, const relay_config *cfg, int all, const char *ids_array,
                              int retired, long long *kept, char *err, size_t err_size);

/* A source's requeue inside a transaction: how many it requeued (and in
 * *kept, dead letters it could not), or -1 with err. */
typedef long long (*requeue_fn)(PGconn *conn, const relay_config *cfg, int all,
                                const char *ids_array, long long *kept, char *err, size_t err_size);

/* `requeue`: runs fn in one transaction over all dead events or the given
 * event ids, and prints what it did. Returns the exit code. */
int dead_letter_requeue_command(PGconn *conn, const relay_config *cfg, int all, char **ids,
                                int count, requeue_fn fn);

#endif
