#include "db/enqueue.h"

/* SQL text reads best as written. */
/* clang-format off */
const char *const enqueue_steps[] = {
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {c.aggregate_seq} bigint,"
    " ADD COLUMN IF NOT EXISTS {c.event_version} text",
    /* One row per aggregate: its last number. Counted here, not by max() over
     * the outbox, whose rows retention deletes (the numbers would repeat).
     * A hot aggregate's row is updated in place (HOT): the free room. */
    "CREATE TABLE IF NOT EXISTS {schema}.{n._aggregate_seq} (aggregate_type text NOT NULL,"
    " aggregate_id text NOT NULL, seq bigint NOT NULL, PRIMARY KEY (aggregate_type, aggregate_id))"
    " WITH (fillfactor = 70)",
    /*
     * Per-aggregate commit order: an insert takes a transaction-scoped lock on
     * its aggregate, then draws its id and its number. A second transaction
     * writing the same aggregate waits for the first to end, so its ids and
     * numbers are higher AND commit later: a lower id of an aggregate can
     * never still be uncommitted when a higher one is visible, and a rolled
     * back number is given again (no gap). Other aggregates never wait.
     * TG_ARGV[0]: the id column. As the table's owner, so that INSERT on the
     * outbox is the one grant a writer needs (not the sequence and the
     * counters too); a trigger runs only for an insert its caller may make.
     * In a partitioned outbox the trigger fires on the partition: the lock
     * and the sequence are the root table's, so that two partitions'
     * inserts of one aggregate still wait for each other.
     */
    ENQUEUE_ORDER_HEAD
    " INSERT INTO {schema}.{n._aggregate_seq} AS s VALUES (NEW.{c.aggregate_type},"
    " NEW.{c.aggregate_id}, 1) ON CONFLICT (aggregate_type, aggregate_id)"
    " DO UPDATE SET seq = s.seq + 1 RETURNING s.seq INTO NEW.{c.aggregate_seq};"
    " RETURN NEW; END {$}",
    "DROP TRIGGER IF EXISTS {n._order} ON {table}",
    "CREATE TRIGGER {n._order} BEFORE INSERT ON {table}"
    " FOR EACH ROW EXECUTE FUNCTION {schema}.{n._order}({lit.c.id})",
    /* A key remembers the event it enqueued, whatever retention does to the
     * row, until outbox_..._idempotency_prune forgets it. */
    "CREATE TABLE IF NOT EXISTS {schema}.{n._idempotency} (key text PRIMARY KEY,"
    " event_id uuid NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
    "CREATE INDEX IF NOT EXISTS {n._idempotency_created} ON {schema}.{n._idempotency} (created_at)",
    "CREATE OR REPLACE FUNCTION {schema}.{n._idempotency_prune}(p_older_than interval)"
    " RETURNS bigint LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS {$}"
    " WITH d AS (DELETE FROM {schema}.{n._idempotency} WHERE created_at < now() - $1 RETURNING 1)"
    " SELECT count(*) FROM d {$}",
    /* the version 2 signature: one with more parameters beside it would make
     * every call that names only the first ones ambiguous */
    "DROP FUNCTION IF EXISTS {schema}.{n._enqueue}(text, text, text, {table}.{c.payload}%TYPE,"
    " {table}.{c.headers}%TYPE, text)",
    /*
     * As its caller: only a role that may INSERT into the outbox can enqueue
     * (and, for a key, INSERT and SELECT on the keys). A key's row is
     * inserted first: a concurrent enqueue of the same key waits there for
     * this transaction, then finds the key (a commit: the same event id, no
     * row) or takes it (a rollback). The delay is available_at: the claim
     * and the WAL window hold the event until then.
     */
    "CREATE OR REPLACE FUNCTION {schema}.{n._enqueue}("
    " p_aggregate_type text, p_aggregate_id text, p_event_type text,"
    " p_payload {table}.{c.payload}%TYPE,"
    " p_headers {table}.{c.headers}%TYPE DEFAULT NULL, p_destination text DEFAULT NULL,"
    " p_event_version text DEFAULT NULL, p_deliver_after interval DEFAULT NULL,"
    " p_idempotency_key text DEFAULT NULL)"
    " RETURNS uuid LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS {$}"
    " DECLARE v uuid := gen_random_uuid(); w uuid; BEGIN"
    " IF p_idempotency_key IS NOT NULL THEN"
    "  INSERT INTO {schema}.{n._idempotency} (key, event_id) VALUES (p_idempotency_key, v)"
    "  ON CONFLICT (key) DO NOTHING RETURNING event_id INTO w;"
    "  IF w IS NULL THEN"
    "   SELECT event_id INTO w FROM {schema}.{n._idempotency} WHERE key = p_idempotency_key;"
    "   RETURN w;"
    "  END IF;"
    " END IF;"
    " INSERT INTO {table} ({c.event_id}, {c.aggregate_type}, {c.aggregate_id}, {c.event_type},"
    " {c.payload}, {c.headers}, {c.destination}, {c.event_version}, {c.available_at})"
    " VALUES (v, p_aggregate_type, p_aggregate_id, p_event_type, p_payload, p_headers,"
    " p_destination, p_event_version, now() + coalesce(greatest(p_deliver_after, '0'), '0'));"
    " RETURN v; END {$}",
};
/* clang-format on */

const size_t enqueue_step_count = sizeof enqueue_steps / sizeof enqueue_steps[0];
