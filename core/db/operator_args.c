#include "db/operator_args.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "db/db.h"

int arg_is_uuid(const char *text)
{
    size_t len = strlen(text);
    int braced = len >= 2 && text[0] == '{' && text[len - 1] == '}';
    const char *s = text + braced, *end = text + len - braced;
    int digits = 0;
    for (; s < end; s++) {
        if (isxdigit((unsigned char)*s))
            digits++;
        else if (*s != '-' || digits == 0 || digits % 4 != 0 || s[1] == '-' || s + 1 == end)
            return 0;
    }
    return digits == 32;
}

int arg_check_event_ids(const char *command, char *const *ids, int count)
{
    for (int i = 0; i < count; i++) {
        if (arg_is_uuid(ids[i]))
            continue;
        char shown[80];
        text_copy(shown, sizeof shown, ids[i]);
        fprintf(stderr,
                "outbox-relay %s: \"%s\" is not an event id (a UUID, such as "
                "0f8fad5b-d9cb-469f-a165-70867728950e)\n",
                command, shown);
        return -1;
    }
    return 0;
}

/* One text out of one statement with text as $1: 0, or -1 when it failed
 * (a bad value). In the caller's transaction, in a savepoint: a failed
 * statement must not end it. */
static int one_text(PGconn *conn, const char *sql, const char *text, char *out, size_t out_size)
{
    int in_tx = PQtransactionStatus(conn) == PQTRANS_INTRANS;
    char ignored[256];
    if (in_tx)
        db_exec(conn, "SAVEPOINT obx_arg", ignored, sizeof ignored);
    PGresult *res = PQexecParams(conn, sql, 1, NULL, &text, NULL, NULL, 0);
    int ok =
        PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0);
    if (ok && out)
        text_copy(out, out_size, PQgetvalue(res, 0, 0));
    PQclear(res);
    if (in_tx)
        db_exec(conn, ok ? "RELEASE obx_arg" : "ROLLBACK TO obx_arg", ignored, sizeof ignored);
    return ok ? 0 : -1;
}

int arg_time(PGconn *conn, const char *option, const char *text, char *out, size_t out_size,
             char *err, size_t err_size)
{
    /* "... ago" is an interval to PostgreSQL (negative): added to now() */
    static const char sql[] =
        "SELECT CASE WHEN $1 ~* '^[[:space:][:alnum:].+-]+[[:space:]]ago[[:space:]]*$'"
        " THEN (now() + $1::interval)::text ELSE $1::timestamptz::text END";
    if (one_text(conn, sql, text, out, out_size) == 0)
        return 0;
    char shown[80];
    text_copy(shown, sizeof shown, text);
    snprintf(err, err_size,
             "%s \"%s\" is not a time: give an ISO 8601 time ('2026-12-01T10:00:00Z', "
             "'2026-12-01 10:00'), or a relative one ('1 hour ago', '2 days ago')",
             option, shown);
    return -1;
}

int arg_interval(PGconn *conn, const char *option, const char *text, char *err, size_t err_size)
{
    if (one_text(conn, "SELECT 1 WHERE $1::interval > '0'", text, NULL, 0) == 0)
        return 0;
    char shown[80];
    text_copy(shown, sizeof shown, text);
    snprintf(err, err_size,
             "%s \"%s\" is not a positive interval: give one such as '7 days' or '12 hours'",
             option, shown);
    return -1;
}
