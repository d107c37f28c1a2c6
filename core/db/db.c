#include "db/db.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/conninfo.h"
#include "base/log.h"
#include "db/sql.h"

void db_error(PGconn *conn, const PGresult *res, char *err, size_t err_size)
{
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    if (!msg || !*msg)
        msg = PQerrorMessage(conn);
    snprintf(err, err_size, "%s", msg && *msg ? msg : "unknown database error");
    conninfo_redact(err, err_size);
}

/* Server notices go through the relay's log, so JSON logs stay JSON. */
static void notice_to_log(void *arg, const char *message)
{
    (void)arg;
    char text[1024];
    snprintf(text, sizeof text, "%s", message);
    conninfo_redact(text, sizeof text);
    log_warn("postgres: %s", text);
}

/*
 * Session settings. The defaults come first, so the conninfo's own options
 * may change them; what keeps the relay's SQL safe comes last and always
 * wins: string literals read the same whatever the server's default. The
 * search_path is fixed too, not taken from role or database settings:
 * pg_catalog and pg_temp only. A schema anyone may CREATE in (public
 * before PostgreSQL 15) on the path lets its objects shadow built-ins the
 * relay calls unqualified: public.format(text, text, text) is a better
 * match than pg_catalog's format(text, VARIADIC "any"), and so ran as the
 * relay's role (issue 54). Every name of the relay's own is qualified; a
 * trigger a user adds to the outbox runs with this path when the relay
 * updates or deletes rows, so it qualifies its names or sets its own path
 * (docs/security.md).
 * Prepared statements run one generic plan, made with sequential scans
 * off: planning the ordered claim for every execution cost 1.5-2 ms of
 * CPU, most of a small claim's time, and every statement of the relay is
 * an index walk. Without enable_seqscan = off, a generic plan made while
 * the outbox was empty (after an ANALYZE of the empty table) scanned the
 * whole table for every claim and mark once it had filled. JIT off: a
 * generic plan cannot see its LIMIT and counts a tenth of the table, so on
 * a large outbox its cost passed jit_above_cost and every execution
 * compiled anew (the cursor's read of 500 rows of 10 million: 40 ms of JIT
 * for 2 ms of work).
 */
#define SESSION_DEFAULTS                                                                           \
    "-c client_min_messages=warning -c plan_cache_mode=force_generic_plan -c enable_seqscan=off"   \
    " -c jit=off -c search_path=pg_catalog,pg_temp"
/* bytea_output=hex: the message builder decodes bytea payloads in hex form only */
#define SESSION_PINNED "-c standard_conforming_strings=on -c bytea_output=hex"

/* WAL mode's replication connection: pgoutput writes timestamps in the
 * walsender's style, so it is pinned to one the relay parses. */
#define REPLICATION_PINNED " -c datestyle=ISO -c timezone=UTC -c bytea_output=hex"

/* The walsender gives up on a client silent this long (the relay reports
 * every status_interval_ms): a hung active relay (SIGSTOP, a wedged host)
 * frees the slot for a standby in about this time, not the server's
 * default minute. */
int db_wal_sender_timeout_ms(const relay_config *cfg)
{
    int three = 3 * cfg->wal_status_interval_ms;
    return three > DB_WAL_SENDER_TIMEOUT_MIN_MS ? three : DB_WAL_SENDER_TIMEOUT_MIN_MS;
}

static PGconn *connect_as(const relay_config *cfg, const char *application, int replication,
                          char *err, size_t err_size)
{
    PQconninfoOption *opts = conninfo_parse(cfg->conninfo);
    if (!opts) { /* the config loader checked it: only a bug gets here */
        snprintf(err, err_size,
                 "cannot connect to the database: database.conninfo cannot be "
                 "parsed");
        return NULL;
    }
    size_t n = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        n++;
    const char **keys = calloc(n + 5, sizeof *keys), **values = calloc(n + 5, sizeof *values);
    size_t k = 0;
    keys[k] = "application_name", values[k++] = application;
    keys[k] = "connect_timeout", values[k++] = "10";
    const char *user_options = "";
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        if (strcmp(o->keyword, "options") == 0)
            user_options = o->val;
        else
            keys[k] = o->keyword, values[k++] = o->val; /* later keys win */
    }
    char sender_timeout[48] = "";
    if (replication)
        snprintf(sender_timeout, sizeof sender_timeout, " -c wal_sender_timeout=%dms",
                 db_wal_sender_timeout_ms(cfg));
    size_t options_size = strlen(user_options) + sizeof SESSION_DEFAULTS + sizeof SESSION_PINNED +
                          sizeof REPLICATION_PINNED + sizeof sender_timeout + 2;
    char *options = malloc(options_size);
    snprintf(options, options_size, "%s %s %s%s%s", SESSION_DEFAULTS, user_options, SESSION_PINNED,
             replication ? REPLICATION_PINNED : "", sender_timeout);
    keys[k] = "options", values[k++] = options;
    if (replication)
        keys[k] = "replication", values[k++] = "database";
    keys[k] = NULL, values[k] = NULL;
    PGconn *conn = PQconnectdbParams(keys, values, 0); /* parsed already: no expansion */
    free(options);
    free(keys);
    free(values);
    PQconninfoFree(opts);
    if (PQstatus(conn) != CONNECTION_OK) {
        char why[512];
        db_error(conn, NULL, why, sizeof why);
        snprintf(err, err_size, "cannot connect to the database: %s", why);
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, notice_to_log, NULL);
    return conn;
}

PGconn *db_connect(const relay_config *cfg, const char *application, char *err, size_t err_size)
{
    return connect_as(cfg, application, 0, err, err_size);
}

PGconn *db_connect_replication(const relay_config *cfg, const char *application, char *err,
                               size_t err_size)
{
    return connect_as(cfg, application, 1, err, err_size);
}

/* init-db --print-sql's script: NULL, or where db_exec writes what it runs.
 * Set once, before any thread starts. */
static FILE *script;

void db_script_to(FILE *out)
{
    script = out;
}

FILE *db_script(void)
{
    return script;
}

void db_script_call(PGconn *conn, const relay_config *cfg, const char *head,
                    const char *const *args, int n)
{
    char *call = sql_render(cfg, head);
    fprintf(script, "%s(", call);
    for (int i = 0; i < n; i++) {
        char *lit = PQescapeLiteral(conn, args[i], strlen(args[i]));
        fprintf(script, "%s%s", i ? ", " : "", lit ? lit : "NULL");
        PQfreemem(lit);
    }
    fputs(");\n", script);
    free(call);
}

/* With a script, the install runs in the one transaction init-db opened and
 * rolls back: its own BEGIN and COMMIT are only written. */
static int script_only(const char *sql)
{
    if (!script)
        return 0;
    fprintf(script, "%s;\n", sql);
    return !strcmp(sql, "BEGIN") || !strcmp(sql, "COMMIT");
}

int db_exec(PGconn *conn, const char *sql, char *err, size_t err_size)
{
    if (script_only(sql))
        return 0;
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        db_error(conn, res, err, err_size);
    PQclear(res);
    return ok ? 0 : -1;
}

int db_lost(PGconn *conn)
{
    return PQstatus(conn) != CONNECTION_OK;
}

int db_listen(PGconn *conn, const relay_config *cfg, int on, char *err, size_t err_size)
{
    char channel[SQL_NAME_MAX + 1], quoted[2 * SQL_NAME_MAX + 3], sql[2 * SQL_NAME_MAX + 16];
    sql_channel_name(cfg, channel, sizeof channel);
    sql_quote_ident(quoted, sizeof quoted, channel);
    snprintf(sql, sizeof sql, "%s %s", on ? "LISTEN" : "UNLISTEN", quoted);
    return db_exec(conn, sql, err, err_size);
}

int db_wait_notify(PGconn *conn, int timeout_ms)
{
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0)
        return errno == EINTR ? 0 : -1;
    if (rc == 0)
        return 0;
    if (!PQconsumeInput(conn))
        return -1;
    int woke = 0;
    PGnotify *n;
    while ((n = PQnotifies(conn))) {
        PQfreemem(n);
        woke = 1;
    }
    return woke;
}
