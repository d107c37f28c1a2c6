#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "inbox.h"
#include "log.h"
#include "schema.h"
#include "source.h"
#include "sql.h"

relay_config *command_load_config(const char *path, const char *command)
{
    if (!path) {
        fprintf(stderr, "outbox-relay %s: missing -c FILE (the config file)\n", command);
        return NULL;
    }
    char err[1024];
    relay_config *cfg = config_load(path, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "outbox-relay: config error: %s\n", err);
        return NULL;
    }
    log_setup(cfg->log_level, cfg->log_format);
    return cfg;
}

PGconn *command_connect(const relay_config *cfg)
{
    char err[1024];
    PGconn *conn = db_connect(cfg, "outbox-relay", err, sizeof err);
    if (!conn)
        fprintf(stderr, "outbox-relay: %s\n", err);
    return conn;
}

int command_init_db(const relay_config *cfg, int reset_slot, int inbox)
{
    const source_ops *src = source_for(cfg);
    if (reset_slot && !src->has_slot) {
        fprintf(stderr, "outbox-relay init-db: --reset-slot is for relay.source = \"wal\"\n");
        return 2;
    }
    PGconn *conn = command_connect(cfg);
    if (!conn)
        return 1;
    char err[1024];
    int rc = schema_install(conn, cfg, err, sizeof err);
    if (rc == 0 && src->install)
        rc = src->install(conn, cfg, reset_slot, err, sizeof err);
    if (rc == 0 && inbox)
        rc = inbox_install(conn, cfg, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        return 1;
    }
    /* long names are shortened with a hash: say what the application calls */
    char schema[2 * SQL_NAME_MAX + 3], fn[SQL_NAME_MAX + 1], fn_quoted[2 * SQL_NAME_MAX + 3],
        channel[SQL_NAME_MAX + 1];
    sql_quote_ident(schema, sizeof schema, cfg->schema);
    sql_derived_name(cfg, "_enqueue", fn, sizeof fn);
    sql_quote_ident(fn_quoted, sizeof fn_quoted, fn);
    sql_channel_name(cfg, channel, sizeof channel);
    printf("schema version %d ready on %s.%s (enqueue with %s.%s, notify channel %s)\n",
           SCHEMA_VERSION, cfg->schema, cfg->table, schema, fn_quoted, channel);
    if (inbox)
        printf("consumer inbox ready: %s.outbox_inbox_accept(consumer, event_id)\n", schema);
    return 0;
}

int command_requeue(const relay_config *cfg, int all, char **ids, int count)
{
    if (all == (count > 0)) {
        fprintf(stderr, "outbox-relay requeue: give either --all or one or more event ids\n");
        return 2;
    }
    PGconn *conn = command_connect(cfg);
    if (!conn)
        return 1;
    int rc = source_for(cfg)->requeue(conn, cfg, all, ids, count);
    PQfinish(conn);
    return rc;
}
