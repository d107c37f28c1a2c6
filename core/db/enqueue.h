/* What a write into the outbox does: the commit-order trigger with the
 * per-aggregate sequence, outbox_enqueue with its options, idempotency keys. */
#ifndef OBX_ENQUEUE_H
#define OBX_ENQUEUE_H

#include <stddef.h>

/* init-db's steps for them, in order (schema_run_steps), after the table's. */
extern const char *const enqueue_steps[];
extern const size_t enqueue_step_count;

#endif
