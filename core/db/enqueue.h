/* What a write into the outbox does: the commit-order trigger with the
 * per-aggregate sequence, outbox_enqueue with its options, idempotency keys. */
#ifndef OBX_ENQUEUE_H
#define OBX_ENQUEUE_H

#include <stddef.h>

/* The order trigger's function up to the aggregate's number: it takes the
 * aggregate's lock, then draws the id (see enqueue.c). What follows updates
 * the aggregate's row (the cursor source's variant stamps cursor_xid too). */
#define ENQUEUE_ORDER_HEAD                                                                         \
    "CREATE OR REPLACE FUNCTION {schema}.{n._order}() RETURNS trigger LANGUAGE plpgsql"            \
    " SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {$}"                               \
    " DECLARE root regclass := coalesce(pg_partition_root(TG_RELID), TG_RELID);"                   \
    " BEGIN PERFORM pg_advisory_xact_lock(root::oid::int,"                                         \
    " hashtext(NEW.{c.aggregate_type} || '/' || NEW.{c.aggregate_id}));"                           \
    " NEW.{c.id} := nextval(pg_get_serial_sequence(root::text, TG_ARGV[0]));"

/* init-db's steps for them, in order (schema_run_steps), after the table's. */
extern const char *const enqueue_steps[];
extern const size_t enqueue_step_count;

#endif
