/* A statement from an SQL template (sql.h), run with text parameters: the
 * render, the call and the error in one place for the operator commands. */
#ifndef OBX_SQL_RUN_H
#define OBX_SQL_RUN_H

#include <libpq-fe.h>

#include "config/config.h"

/* Renders tmpl for cfg and runs it with params[0..n). Returns the result
 * when its status is want; else NULL with the error in err, and *bad_input
 * (when bad_input is not NULL) set for SQLSTATE class 22: a value its casts
 * refused (a uuid, interval or timestamptz that does not parse). */
PGresult *sql_run(PGconn *conn, const relay_config *cfg, const char *tmpl, int n,
                  const char *const *params, ExecStatusType want, int *bad_input, char *err,
                  size_t err_size);

#endif
