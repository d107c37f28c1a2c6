/* The outbox schema: created and upgraded by `init-db`, checked by `run`. */
#ifndef OBX_SCHEMA_H
#define OBX_SCHEMA_H

#include <libpq-fe.h>

#include "config/config.h"
#include "db/adopt.h"

/* 2: object names that cannot collide, quoted names in the triggers; the
 * aggregate indexes of the fair ordered claim. 3: aggregate_seq and
 * event_version, enqueue's delay and idempotency key. */
#define SCHEMA_VERSION 3
#define SCHEMA_VERSION_TEXT "3"

/* Creates or upgrades the table, indexes, enqueue function and triggers,
 * idempotently, then checks each of them exists; a table with rows that
 * init-db never set up as from says (adopt.h). Returns 0 or -1 with err. */
int schema_install(PGconn *conn, const relay_config *cfg, adopt_from from, char *err,
                   size_t err_size);

/* Renders each of steps[0..n) for cfg (sql_render) and runs it; stops at
 * the first failure: -1 with why. */
int schema_run_steps(PGconn *conn, const relay_config *cfg, const char *const *steps, size_t n,
                     char *why, size_t why_size);

/* Checks the installed schema version matches; -1 with err otherwise. */
int schema_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

/* A jsonb payload's text size, without failing past 1 GB: one function per
 * schema, whatever the table (a table registered by hand has it too). */
#define SCHEMA_PAYLOAD_SIZE_FUNCTION "outbox_relay_payload_size"

/* Reads the payload column's type: "jsonb", "json", "bytea", "text"... into
 * out. Returns 0 or -1 with err. */
int schema_payload_type(PGconn *conn, const relay_config *cfg, char *out, size_t out_size,
                        char *err, size_t err_size);

#endif
