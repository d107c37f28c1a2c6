/* Operator control in the database: what is paused (the whole source, or
 * outputs by name), one row each in the schema's outbox_relay_control, per
 * outbox table. Every relay on the table reads it (the backlog poller, each
 * second), so a pause reaches all of them, and outlives restarts. */
#ifndef OBX_CONTROL_H
#define OBX_CONTROL_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"
#include "host/pauses.h"

/* The scope of the source's row (its name is ""). */
#define CONTROL_SOURCE "source"
#define CONTROL_OUTPUT "output"

/* Reads the table's rows into p (none when the table does not exist yet).
 * *changed: 1 when the set differs from what p held. Returns 0, or -1 with
 * err, or OWN_REFUSED with err when the table is not init-db's (p kept). */
int control_read(PGconn *conn, const relay_config *cfg, pauses *p, int *changed, char *err,
                 size_t err_size);

/* Logs what p holds paused ("paused by an operator: ..."), or that nothing is. */
void control_log(pauses *p);

/* Pauses (pause = 1, with reason, may be NULL) or resumes scope/name.
 * Returns 1 when that changed something, 0 when it already was so, -1 with err. */
int control_set(PGconn *conn, const relay_config *cfg, const char *scope, const char *name,
                int pause, const char *reason, char *err, size_t err_size);

/* Prints the rows (for status): "paused: output NAME since ... by ... (reason)". */
int control_print(PGconn *conn, const relay_config *cfg, FILE *out, char *err, size_t err_size);

/* Sets json's "pauses": {"source": {"paused", "since", "by", "reason"},
 * "outputs": {NAME: the same}} with every configured output, and "paused"
 * in each entry of json's "outputs" array (if the source made one).
 * Returns 0, or -1 with err. */
int control_json(PGconn *conn, const relay_config *cfg, json_t *json, char *err, size_t err_size);

#endif
