#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/connect_cmd.h"
#include "db/db.h"
#include "db/inbox.h"
#include "db/operator_args.h"
#include "db/schema.h"
#include "db/sql.h"
#include "ops/control.h"
#include "run/sources.h"

/* Says -c is missing when path is NULL. */
static int have_path(const char *path, const char *command)
{
    if (!path)
        fprintf(stderr, "outbox-relay %s: missing -c FILE (the config file)\n", command);
    return path != NULL;
}

relay_config *command_load_config(const char *path, const char *outbox, const char *command)
{
    if (!have_path(path, command))
        return NULL;
    char err[1024];
    relay_config *cfg = config_load_source(path, outbox, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "outbox-relay: config error: %s\n", err);
        return NULL;
    }
    log_setup(cfg->log_level, cfg->log_format);
    return cfg;
}

relay_config **command_load_all(const char *path, const char *outbox, const char *command,
                                size_t *count)
{
    if (outbox) {
        relay_config *cfg = command_load_config(path, outbox, command);
        if (!cfg)
            return NULL;
        relay_config **one = malloc(sizeof *one);
        one[0] = cfg;
        *count = 1;
        return one;
    }
    if (!have_path(path, command))
        return NULL;
    char err[1024];
    relay_config **cfgs = config_load_all(path, count, err, sizeof err);
    if (!cfgs) {
        fprintf(stderr, "outbox-relay: config error: %s\n", err);
        return NULL;
    }
    log_setup(cfgs[0]->log_level, cfgs[0]->log_format);
    return cfgs;
}

PGconn *command_connect(const relay_config *cfg)
{
    char err[1024];
    PGconn *conn = db_connect(cfg, "outbox-relay", err, sizeof err);
    if (!conn)
        fprintf(stderr, "outbox-relay: %s\n", err);
    return conn;
}

/* Every install step init-db runs on one session: 0, or -1 with err. */
static int install(PGconn *conn, const relay_config *cfg, const init_db_options *o, char *err,
                   size_t err_size)
{
    const source_kind *src = source_for(cfg);
    int rc = schema_install(conn, cfg, o->from, err, err_size);
    if (rc == 0 && src->install)
        rc = src->install(conn, cfg, o->reset_slot, err, err_size);
    if (rc == 0 && o->inbox)
        rc = inbox_install(conn, cfg, err, err_size);
    return rc;
}

/* --print-sql: the install runs in a transaction that is rolled back (so
 * every check runs too), and what it ran is printed once it succeeded. */
static int print_sql(PGconn *conn, const relay_config *cfg, const init_db_options *o, char *err,
                     size_t err_size)
{
    char *text = NULL;
    size_t len = 0;
    FILE *script = open_memstream(&text, &len);
    if (!script || db_exec(conn, "BEGIN", err, err_size) < 0) {
        if (script)
            fclose(script);
        free(text);
        return -1;
    }
    db_script_to(script);
    int rc = install(conn, cfg, o, err, err_size);
    db_script_to(NULL);
    fclose(script);
    char ignored[256];
    db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
    if (rc == 0)
        printf("-- outbox-relay %s init-db for %s.%s (schema version %d), as it would run on "
               "this database now\n%s",
               OBX_VERSION, cfg->schema, cfg->table, SCHEMA_VERSION, text);
    free(text);
    return rc;
}

int command_init_db(const relay_config *cfg, const init_db_options *o)
{
    const source_kind *src = source_for(cfg);
    if (o->reset_slot && (!src->has_slot || o->print_sql)) {
        fprintf(stderr, "outbox-relay init-db: --reset-slot is for relay.source = \"wal\", "
                        "without --print-sql\n");
        return 2;
    }
    if (o->from == ADOPT_FROM_BEGINNING && src->has_slot) {
        fprintf(stderr, "outbox-relay init-db: --from beginning: WAL mode sends the rows "
                        "committed after its slot is made, never those already in the table "
                        "(poll and cursor mode can send them)\n");
        return 2;
    }
    PGconn *conn = command_connect(cfg);
    if (!conn)
        return 1;
    char err[1024];
    int rc = o->print_sql ? print_sql(conn, cfg, o, err, sizeof err)
                          : install(conn, cfg, o, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        return 1;
    }
    if (o->print_sql)
        return 0;
    /* long names are shortened with a hash: say what the application calls */
    char schema[2 * SQL_NAME_MAX + 3], fn[SQL_NAME_MAX + 1], fn_quoted[2 * SQL_NAME_MAX + 3],
        channel[SQL_NAME_MAX + 1];
    sql_quote_ident(schema, sizeof schema, cfg->schema);
    sql_derived_name(cfg, "_enqueue", fn, sizeof fn);
    sql_quote_ident(fn_quoted, sizeof fn_quoted, fn);
    sql_channel_name(cfg, channel, sizeof channel);
    printf("schema version %d ready on %s.%s (enqueue with %s.%s, notify channel %s)\n",
           SCHEMA_VERSION, cfg->schema, cfg->table, schema, fn_quoted, channel);
    if (o->inbox)
        printf("consumer inbox ready: %s.outbox_inbox_accept(consumer, event_id)\n", schema);
    return 0;
}

int command_installed(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    return schema_check(conn, cfg, err, err_size) == 0 &&
           connect_tables_check(conn, cfg, err, err_size) == 0;
}

int command_requeue(const relay_config *cfg, int all, char **ids, int count)
{
    if (all == (count > 0)) {
        fprintf(stderr, "outbox-relay requeue: give either --all or one or more event ids\n");
        return 2;
    }
    if (arg_check_event_ids("requeue", ids, count) < 0)
        return 2;
    PGconn *conn = command_connect(cfg);
    if (!conn)
        return 1;
    char err[1024];
    int rc = command_installed(conn, cfg, err, sizeof err) ? 0 : 1;
    if (rc)
        fprintf(stderr, "outbox-relay requeue: %s\n", err);
    else
        rc = source_for(cfg)->requeue(conn, cfg, all, ids, count);
    PQfinish(conn);
    return rc;
}

int command_pause(const relay_config *cfg, int pause, const char *output, int source,
                  const char *reason)
{
    const char *verb = pause ? "pause" : "resume";
    if ((output != NULL) == (source != 0)) {
        fprintf(stderr, "outbox-relay %s: give either --output NAME or --source\n", verb);
        return 2;
    }
    int known = !output;
    for (size_t i = 0; output && i < cfg->output_count; i++)
        known |= strcmp(cfg->outputs[i].name, output) == 0;
    if (!known) {
        fprintf(stderr, "outbox-relay %s: %s has no output \"%s\"\n", verb, cfg->path, output);
        return 2;
    }
    PGconn *conn = command_connect(cfg);
    if (!conn)
        return 1;
    char err[1024];
    int rc = control_set(conn, cfg, output ? CONTROL_OUTPUT : CONTROL_SOURCE, output ? output : "",
                         pause, reason, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        fprintf(stderr, "outbox-relay %s: %s\n", verb, err);
        return 1;
    }
    const char *what = output ? output : "the source";
    if (rc == 0)
        printf("%s%s was %s\n", output ? "output " : "", what,
               pause ? "already paused" : "not paused");
    else
        printf("%s%s %s: the relays on %s.%s take it within a second\n", output ? "output " : "",
               what, pause ? "paused" : "resumed", cfg->schema, cfg->table);
    return 0;
}
