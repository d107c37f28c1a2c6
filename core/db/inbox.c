/* init-db --inbox: the consumer inbox's table and functions (inbox.h). */
#include "db/inbox.h"

#include <stdio.h>

#include "db/db.h"
#include "db/schema.h"

/* SQL text reads best as written. */
/* clang-format off */
static const char *const inbox_steps[] = {
    "SELECT pg_advisory_xact_lock(hashtext('outbox-relay init-db'))",
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    /* one row per event a consumer has processed; the key is the whole
     * check, so a duplicate costs one index probe */
    "CREATE TABLE IF NOT EXISTS {schema}.outbox_inbox ("
    " consumer text NOT NULL, event_id uuid NOT NULL,"
    " accepted_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (consumer, event_id))",
    /* rows arrive in time order: a block range index finds old ones for the
     * prune at a fraction of a btree's cost per insert */
    "CREATE INDEX IF NOT EXISTS outbox_inbox_accepted_at ON {schema}.outbox_inbox"
    " USING brin (accepted_at)",
    /*
     * True the first time CONSUMER accepts EVENT_ID, false for a duplicate.
     * Called in the consumer's own transaction, before its handler's writes:
     * the row commits or rolls back with them. A second transaction accepting
     * the same event while the first is open waits for it: false if it
     * committed, true if it rolled back. As its caller: the consumer's role
     * needs INSERT on outbox_inbox.
     */
    "CREATE OR REPLACE FUNCTION {schema}.outbox_inbox_accept(p_consumer text, p_event_id uuid)"
    " RETURNS boolean LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS {$}"
    " WITH i AS (INSERT INTO {schema}.outbox_inbox (consumer, event_id) VALUES ($1, $2)"
    " ON CONFLICT DO NOTHING RETURNING 1) SELECT EXISTS (SELECT 1 FROM i) {$}",
    /* Retention: deletes what was accepted longer ago than KEEP, which must
     * outlast any redelivery (a broker's retention, a replay); returns the
     * count. Run it from a scheduler (pg_cron, the consumer). */
    "CREATE OR REPLACE FUNCTION {schema}.outbox_inbox_prune(p_keep interval)"
    " RETURNS bigint LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS {$}"
    " WITH d AS (DELETE FROM {schema}.outbox_inbox WHERE accepted_at < now() - $1"
    " RETURNING 1) SELECT count(*) FROM d {$}",
};
/* clang-format on */

int inbox_install(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    char why[1024];
    if (db_exec(conn, "BEGIN", why, sizeof why) == 0) {
        if (schema_run_steps(conn, cfg, inbox_steps, sizeof inbox_steps / sizeof *inbox_steps, why,
                             sizeof why) == 0 &&
            db_exec(conn, "COMMIT", why, sizeof why) == 0)
            return 0;
        char ignored[256];
        db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
    }
    snprintf(err, err_size, "init-db --inbox failed in schema %s: %s", cfg->schema, why);
    return -1;
}
