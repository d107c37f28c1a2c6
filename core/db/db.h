/* PostgreSQL helpers shared by the engine and the commands. */
#ifndef OBX_DB_H
#define OBX_DB_H

#include <libpq-fe.h>
#include <stdio.h>

#include "config/config.h"

/* Connects with cfg->conninfo, with standard_conforming_strings on
 * whatever the server or conninfo say, and a fixed search_path
 * (pg_catalog, public) unless the conninfo's options set one. Returns NULL
 * and writes a one-line, redacted reason to err. */
PGconn *db_connect(const relay_config *cfg, const char *application, char *err, size_t err_size);

/* As db_connect, with replication=database (WAL mode's stream), in ISO
 * DateStyle and UTC. */
PGconn *db_connect_replication(const relay_config *cfg, const char *application, char *err,
                               size_t err_size);

/* Runs sql with no parameters; returns 0, or -1 with the error in err. */
int db_exec(PGconn *conn, const char *sql, char *err, size_t err_size);

/* init-db --print-sql: db_exec also writes each statement it runs to out,
 * and only writes BEGIN and COMMIT (the caller holds one transaction open
 * and rolls it back). NULL: off. Set before any thread starts. */
void db_script_to(FILE *out);
FILE *db_script(void);
/* Writes a statement run by PQexecParams to the script: head (rendered by
 * sql_render) called with args as literals. */
void db_script_call(PGconn *conn, const relay_config *cfg, const char *head,
                    const char *const *args, int n);

/* Copies PQerrorMessage / the result's message to err as one line,
 * redacted (conninfo_redact). Use it for every libpq text the relay prints. */
void db_error(PGconn *conn, const PGresult *res, char *err, size_t err_size);

/* True when the connection is gone (as opposed to a failed statement). */
int db_lost(PGconn *conn);

/* LISTEN (on) or UNLISTEN on the outbox's channel (the one its notify
 * trigger signals). 0, or -1 with err. */
int db_listen(PGconn *conn, const relay_config *cfg, int on, char *err, size_t err_size);

/* Waits up to timeout_ms for a NOTIFY on a LISTENing session and reads
 * every one that came (a burst is one wake-up): 1 woken, 0 not, -1 the
 * session is lost. */
int db_wait_notify(PGconn *conn, int timeout_ms);

/* The replication connection's wal_sender_timeout: 3 x
 * relay.wal.status_interval_ms, at least DB_WAL_SENDER_TIMEOUT_MIN_MS. */
#define DB_WAL_SENDER_TIMEOUT_MIN_MS 10000
int db_wal_sender_timeout_ms(const relay_config *cfg);

#endif
