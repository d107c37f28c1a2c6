#include "db/sql_run.h"

#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/sql.h"

PGresult *sql_run(PGconn *conn, const relay_config *cfg, const char *tmpl, int n,
                  const char *const *params, ExecStatusType want, int *bad_input, char *err,
                  size_t err_size)
{
    char *sql = sql_render(cfg, tmpl);
    PGresult *res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) == want)
        return res;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (bad_input)
        *bad_input = state && strncmp(state, "22", 2) == 0;
    db_error(conn, res, err, err_size);
    PQclear(res);
    return NULL;
}
