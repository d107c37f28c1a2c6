/* A source: where events come from (poll: claims over the outbox table;
 * wal: the replication slot), as one table of callbacks. The engine, the
 * CLI and the metrics endpoint ask the source table (sources.c) instead of
 * branching on the configured source. Every source feeds the one delivery
 * core (core/deliver). */
#ifndef OBX_SOURCE_H
#define OBX_SOURCE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"
#include "relay_state.h"

typedef struct source_ops {
    const char *name;
    int has_slot; /* it streams a replication slot: --reset-slot, the slot gauges */
    /* `replay`: an SQL condition (sql_render template) on the outbox row
     * `o` that holds when it was published: what replay may send again. */
    const char *replayable;
    const char *thread; /* its threads' name in /healthz and /metrics ("worker" N) */
    /* The dead_letter output's reader: an SQL template (sql_render) of the
     * dead events as rows of (dead_key (never NULL: one row's), event_id,
     * event_type, aggregate_type,
     * aggregate_id, payload (the column as it is), headers, dead_at (a
     * column, so a bound on it can use an index), dead_at_us, attempts,
     * error, created_at_us), every column named so. */
    const char *dead_events;
    /* The backlog poller's query (sql_render template): one row of (pending,
     * in flight, dead, oldest pending's age in seconds). NULL: the outbox
     * rows' relay columns, as poll mode keeps them. */
    const char *backlog;

    /* What `run` needs beyond the outbox table (NULL: nothing). Returns 0 or
     * -1 (logged). */
    int (*preflight)(const relay_config *cfg);
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
} source_ops;

/* The configured source's table. */
const source_ops *source_for(const relay_config *cfg);

#endif
