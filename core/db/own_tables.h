/* The relay's own tables beside the outbox, made by init-db and checked
 * before use: a role that may CREATE in the outbox's schema could make one
 * of them first, as a view that calls its own code, which would then run as
 * whoever reads it (issue 54). */
#ifndef OBX_OWN_TABLES_H
#define OBX_OWN_TABLES_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"

/* one per schema, shared by every outbox table in it */
#define OWN_SCHEMA_TABLE "outbox_relay_schema"
#define OWN_CONTROL_TABLE "outbox_relay_control"
#define OWN_REPLAY_TABLE "outbox_relay_replay"

/* A table of these is there but not the outbox owner's: refused unread. */
#define OWN_REFUSED (-2)

/* init-db's steps for the control and replay tables (schema_run_steps). */
extern const char *const own_tables_steps[];
extern const size_t own_tables_step_count;

/* Checks the tables of names (NULL-terminated) that exist in the outbox's
 * schema: each must be a table owned by the outbox table's owner (by the
 * current role while there is no outbox yet). Returns how many of them
 * exist, OWN_REFUSED with why (naming the first that is not, its kind and
 * owner), or -1 with why when the check itself failed. */
int own_tables_check(PGconn *conn, const relay_config *cfg, const char *const *names, char *why,
                     size_t why_size);

/* own_tables_check of every table init-db makes beside the outbox: the three
 * above and those named after the table. 0, or -1 with why. */
int own_tables_check_all(PGconn *conn, const relay_config *cfg, char *why, size_t why_size);

/* One table of the relay's (OWN_CONTROL_TABLE...) before it is read or
 * written: 1 present and the outbox owner's table, 0 absent, OWN_REFUSED or
 * -1 with why. */
int own_table_ready(PGconn *conn, const relay_config *cfg, const char *name, char *why,
                    size_t why_size);

#endif
