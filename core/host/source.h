/* A source: where events come from (poll: claims over the outbox table;
 * wal: the replication slot), as one table of callbacks. The engine, the
 * CLI and the metrics endpoint use the table the registry (run/sources.c)
 * gave (relay_state.src) instead of branching on the configured source. Every source feeds the one delivery
 * core (core/deliver). */
#ifndef OBX_SOURCE_H
#define OBX_SOURCE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdio.h>

#include "config/config.h"
#include "host/relay_state.h"

typedef struct source_kind {
    const char *name;
    int has_slot; /* it streams a replication slot: --reset-slot, the slot gauges */
    /* `replay`: an SQL condition (sql_render template) on the outbox row
     * `o` that holds when it was published: what replay may send again. */
    const char *replayable;
    const char *thread; /* its threads' name in /healthz and /metrics ("worker"-N) */
    /* The dead_letter output's reader: an SQL template (sql_render) of the
     * dead events as rows of (dead_key (never NULL: one row's), event_id,
     * event_type, aggregate_type,
     * aggregate_id, payload (the column as it is), headers, dead_at (a
     * column, so a bound on it can use an index), dead_at_us, attempts,
     * error, created_at_us), every column named so. */
    const char *dead_events;
    /* `check-config --connect`: the table privileges the relay's role
     * needs, as space-separated "SUFFIX:PRIV,PRIV" entries (SUFFIX empty:
     * the outbox itself, else the table sql_derived_name names). */
    const char *rights;
    /* The backlog poller's query (sql_render template): one row of (pending,
     * in flight, dead, oldest pending's age in seconds). NULL: the outbox
     * rows' relay columns, as poll mode keeps them. */
    const char *backlog;
    /* The backlog the progress lines follow, in bytes (WAL mode: what its
     * slot holds); NULL: the backlog query's pending count, in events. */
    long long (*backlog_bytes)(const relay_state *st);

    /* The bytes of relay_state.gauges, the series the source keeps beside
     * the shared ones (0: none), and their rendering for /metrics (NULL:
     * none). */
    size_t gauges_size;
    void (*metrics)(FILE *f, const relay_state *st);

    /* What `run` needs beyond the outbox table, checked on the run's first
     * session once the schema is (NULL: nothing): its objects, its
     * statements on the payload column's type. Returns 0 or -1 with err. */
    int (*preflight)(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                     size_t err_size);
    /* init-db's part beyond the outbox table (NULL: nothing). */
    int (*install)(PGconn *conn, const relay_config *cfg, int reset_slot, char *err,
                   size_t err_size);

    /* The start line's words after "relay starting: ". */
    void (*describe)(const relay_config *cfg, int drain, char *line, size_t line_size);
    /* Starts the source's threads (READY is sent by it once they run). */
    void *(*start)(relay_state *st, const char *payload_type);
    /* Waits up to ms; 1 once every thread of the run has ended. */
    int (*join)(void *run, int ms);
    /* A stop was requested; past: its deadline has passed (cancel what
     * still runs). Called between joins; NULL: the source sees the stop itself. */
    void (*stopping)(void *run, int past);
    /* Frees the run once joined. */
    void (*finish)(void *run);

    /* `status` and `requeue` on conn. Status prints its text, or fills json
     * (`status --json`, printed by the caller) when not NULL; returns 0 or 1.
     * Requeue returns an exit code. */
    int (*status)(PGconn *conn, const relay_config *cfg, json_t *json);
    int (*requeue)(PGconn *conn, const relay_config *cfg, int all, char **ids, int count);

    /* `purge`, in the caller's transaction: the dead events the filter
     * selects, locked (FOR UPDATE), oldest first, as rows of (key, event_id,
     * event_type, aggregate_type, last error); then the delete of the keys
     * chosen among them (a PostgreSQL array literal), still dead only.
     * Select returns NULL on an error (err: SQLSTATE class 22, a bad id or
     * interval, sets *bad_input); delete returns the count or -1 with err. */
    PGresult *(*purge_select)(PGconn *conn, const relay_config *cfg, const char *ids_array,
                              const char *older_than, int *bad_input, char *err, size_t err_size);
    long long (*purge_delete)(PGconn *conn, const relay_config *cfg, const char *keys_array,
                              char *err, size_t err_size);
} source_kind;

#endif
