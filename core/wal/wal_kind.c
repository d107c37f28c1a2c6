#include "wal/wal_kind.h"

#include <stdio.h>

#include "base/service_notify.h"
#include "host/source_thread.h"
#include "wal/wal_metrics.h"
#include "wal/wal_schema.h"
#include "wal/wal_slot.h"
#include "wal/wal_source.h"
#include "window/dead_purge.h"
#include "window/dead_table.h"

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

const source_kind wal_kind = {
    .gauges_size = sizeof(wal_gauges),
    .metrics = wal_metrics,
    .backlog_bytes = wal_backlog_bytes,
    .name = "wal",
    .has_slot = 1,
    .thread = "wal-stream",
    .preflight = wal_preflight,
    .install = wal_schema_install,
    .describe = describe,
    .start = start,
    /* no .stopping: the stream sees the stop and settles up to the deadline itself */
    .join = source_thread_join,
    .finish = source_thread_finish,
    .status = wal_command_status,
    .dead_events = dead_table_events_sql,
    /* rows stay in the table: those never dead-lettered were published */
    .replayable = "NOT EXISTS (SELECT 1 FROM {schema}.{n._dead_letter} d WHERE d.{c.event_id} = "
                  "o.{c.event_id})",
    /* the stream needs the REPLICATION attribute (preflight); the dead letters */
    .rights = "_dead_letter:SELECT,INSERT,UPDATE",
    .requeue = dead_table_requeue,
    .purge_select = dead_table_purge_select,
    .purge_delete = dead_table_purge_delete,
};
