#include "wal_ops.h"

#include <stdio.h>

#include "service_notify.h"
#include "source_thread.h"
#include "wal_dead.h"
#include "wal_purge.h"
#include "wal_schema.h"
#include "wal_source.h"

static void describe(const relay_config *cfg, int drain, char *line, size_t line_size)
{
    snprintf(line, line_size, "source wal (slot %s, publication %s), ordering %s, %zu outputs%s",
             cfg->wal_slot, cfg->wal_publication,
             cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none", cfg->output_count,
             drain ? ", drain" : "");
}

static void *start(relay_state *st, const char *payload_type)
{
    (void)payload_type; /* the decoder reads the column's type from the stream */
    void *run = source_thread_start(st, wal_run);
    notify_send("READY=1\nSTATUS=relaying from the WAL");
    return run;
}

const char wal_dead_events_sql[] =
    "SELECT coalesce({c.event_id}::text,"
    " 'raw:' || dl_commit_lsn::text || ':' || md5(coalesce(dl_raw, ''))) AS dead_key,"
    " {c.event_id}::text AS event_id, {c.event_type}::text AS event_type,"
    " {c.aggregate_type}::text AS aggregate_type, {c.aggregate_id}::text AS aggregate_id,"
    " {c.payload} AS payload, {c.headers}::text AS headers,"
    " dl_at AS dead_at, (extract(epoch FROM dl_at) * 1000000)::bigint AS dead_at_us,"
    " dl_attempts AS attempts, dl_error AS error,"
    " (extract(epoch FROM {c.created_at}) * 1000000)::bigint AS created_at_us"
    " FROM {schema}.{n._dead_letter}";

const source_ops wal_ops = {
    .name = "wal",
    .has_slot = 1,
    .thread = "wal stream",
    .preflight = wal_preflight,
    .install = wal_schema_install,
    .describe = describe,
    .start = start,
    /* no .stopping: the stream sees the stop and settles up to the deadline itself */
    .join = source_thread_join,
    .finish = source_thread_finish,
    .status = wal_command_status,
    .dead_events = wal_dead_events_sql,
    /* rows stay in the table: those never dead-lettered were published */
    .replayable = "NOT EXISTS (SELECT 1 FROM {schema}.{n._dead_letter} d WHERE d.{c.event_id} = "
                  "o.{c.event_id})",
    .requeue = wal_command_requeue,
    .purge_select = wal_purge_select,
    .purge_delete = wal_purge_delete,
};
