/* The config's sections: database (with the column names), relay (with
 * backoff), log and metrics; and the defaults for all of them. */
#include "config_sections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conninfo.h"
#include "listen_addr.h"

/* clang-format off */
#define COLUMN(f) {#f, offsetof(cfg_columns, f)}
/* clang-format on */
static const struct {
    const char *name;
    size_t offset;
} column_names[] = {
    COLUMN(id),          COLUMN(event_id),     COLUMN(aggregate_type), COLUMN(aggregate_id),
    COLUMN(event_type),  COLUMN(payload),      COLUMN(headers),        COLUMN(destination),
    COLUMN(created_at),  COLUMN(available_at), COLUMN(attempts),       COLUMN(lease_owner),
    COLUMN(lease_until), COLUMN(published_at), COLUMN(dead_at),        COLUMN(last_error),
};
#define COLUMN_COUNT (sizeof column_names / sizeof column_names[0])

static char **column_slot(cfg_columns *col, size_t i)
{
    return (char **)((char *)col + column_names[i].offset);
}

void config_load_database(cfg_reader *st, const config_setting_t *db)
{
    static const char *const keys[] = {"conninfo", "schema", "table", "columns", NULL};
    relay_config *cfg = st->cfg;
    if (!db) {
        cfg_fail(st, NULL, "the database section is missing: database = { conninfo = \"...\"; };");
        return;
    }
    if (cfg_check_keys(st, db, "database", keys) < 0)
        return;
    if (!cfg_member(db, "conninfo")) {
        cfg_fail(st, db, "database.conninfo is required (a libpq connection string or URI)");
        return;
    }
    if (cfg_get_string(st, db, "conninfo", &cfg->conninfo, 0) < 0 ||
        cfg_get_string(st, db, "schema", &cfg->schema, 0) < 0 ||
        cfg_get_string(st, db, "table", &cfg->table, 0) < 0)
        return;
    /* libpq's own message would quote the text, password included */
    PQconninfoOption *parsed = conninfo_parse(cfg->conninfo);
    if (!parsed) {
        cfg_fail(st, cfg_member(db, "conninfo"),
                 "database.conninfo is not a valid libpq connection string or URI (check its "
                 "quoting and %%-escapes; libpq's message is not shown as it may hold the "
                 "password)");
        return;
    }
    PQconninfoFree(parsed);
    if (cfg_check_identifier(st, cfg_member(db, "schema"), "database.schema", cfg->schema) < 0 ||
        cfg_check_identifier(st, cfg_member(db, "table"), "database.table", cfg->table) < 0)
        return;
    const config_setting_t *cols = cfg_member(db, "columns");
    if (!cols)
        return;
    if (!config_setting_is_group(cols)) {
        cfg_fail(st, cols, "database.columns must be a group { id = \"...\"; ... }");
        return;
    }
    const char *names[COLUMN_COUNT + 1];
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        names[i] = column_names[i].name;
    names[COLUMN_COUNT] = NULL;
    if (cfg_check_keys(st, cols, "database.columns", names) < 0)
        return;
    for (size_t i = 0; i < COLUMN_COUNT; i++) {
        char **slot = column_slot(&cfg->col, i);
        if (cfg_get_string(st, cols, names[i], slot, 0) > 0 &&
            cfg_check_identifier(st, cfg_member(cols, names[i]), "column name", *slot) < 0)
            return;
    }
}

/* A slot name as PostgreSQL takes it: lower-case letters, digits, underscores. */
static int slot_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* relay.wal: the slot, the publication and the window of WAL mode. The
 * default names derive from the table: "<table>_relay", folded to what a
 * slot name may hold. */
static int load_wal(cfg_reader *st, const config_setting_t *w)
{
    static const char *const keys[] = {
        "slot",        "publication",        "max_in_flight",
        "lag_warn_mb", "status_interval_ms", "accept_logical_messages",
        NULL};
    relay_config *cfg = st->cfg;
    if (cfg_check_keys(st, w, "relay.wal", keys) < 0 ||
        cfg_get_string(st, w, "slot", &cfg->wal_slot, 0) < 0 ||
        cfg_get_string(st, w, "publication", &cfg->wal_publication, 0) < 0 ||
        cfg_get_int(st, w, "max_in_flight", &cfg->wal_max_in_flight, 1, 1000000) < 0 ||
        cfg_get_int(st, w, "lag_warn_mb", &cfg->wal_lag_warn_mb, 1, 1 << 30) < 0 ||
        cfg_get_int(st, w, "status_interval_ms", &cfg->wal_status_interval_ms, 10, 60000) < 0 ||
        cfg_get_bool(st, w, "accept_logical_messages", &cfg->wal_accept_logical_messages) < 0)
        return -1;
    if (cfg->wal_slot && !slot_name_ok(cfg->wal_slot))
        return cfg_fail(st, cfg_member(w, "slot"),
                        "relay.wal.slot must be 1 to 63 lower-case letters, digits or underscores");
    if (cfg->wal_publication &&
        cfg_check_identifier(st, cfg_member(w, "publication"), "relay.wal.publication",
                             cfg->wal_publication) < 0)
        return -1;
    if (!cfg->wal_slot) {
        char name[64];
        snprintf(name, sizeof name, "%.*s_relay", 57, cfg->table);
        for (char *p = name; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
            else if (!slot_name_ok((char[]){*p, 0}))
                *p = '_';
        cfg->wal_slot = strdup(name);
    }
    if (!cfg->wal_publication)
        cfg->wal_publication = strdup(cfg->wal_slot);
    return 0;
}

void config_load_relay(cfg_reader *st, const config_setting_t *r)
{
    static const char *const keys[] = {"workers",
                                       "batch_size",
                                       "lease_seconds",
                                       "poll_interval_ms",
                                       "shutdown_timeout_ms",
                                       "ordering",
                                       "on_dead",
                                       "max_attempts",
                                       "backoff",
                                       "retention",
                                       "retention_hours",
                                       "max_payload_bytes",
                                       "drivers_dir",
                                       "source",
                                       "wal",
                                       NULL};
    static const char *const backoff_keys[] = {"initial_ms", "max_ms", "multiplier", "jitter",
                                               NULL};
    static const char *const orderings[] = {"aggregate", "none", NULL};
    static const char *const policies[] = {"skip", "block", NULL};
    static const char *const retentions[] = {"mark", "delete", NULL};
    static const char *const sources[] = {"poll", "wal", NULL};
    relay_config *cfg = st->cfg;
    int lease_s = cfg->lease_ms / 1000, ordering = cfg->ordering, on_dead = cfg->on_dead,
        retention = cfg->retention, source = cfg->source;
    if (cfg_check_keys(st, r, "relay", keys) < 0 ||
        cfg_get_int(st, r, "workers", &cfg->workers, 1, 256) < 0 ||
        cfg_get_int(st, r, "batch_size", &cfg->batch_size, 1, 100000) < 0 ||
        cfg_get_int(st, r, "lease_seconds", &lease_s, 1, 86400) < 0 ||
        cfg_get_int(st, r, "poll_interval_ms", &cfg->poll_interval_ms, 1, 3600000) < 0 ||
        cfg_get_int(st, r, "shutdown_timeout_ms", &cfg->shutdown_timeout_ms, 0, 3600000) < 0 ||
        cfg_get_enum(st, r, "ordering", &ordering, orderings) < 0 ||
        cfg_get_enum(st, r, "on_dead", &on_dead, policies) < 0 ||
        cfg_get_int(st, r, "max_attempts", &cfg->max_attempts, 1, 1000000) < 0 ||
        cfg_get_enum(st, r, "retention", &retention, retentions) < 0 ||
        cfg_get_int(st, r, "retention_hours", &cfg->retention_hours, 0, 1000000) < 0 ||
        cfg_get_int(st, r, "max_payload_bytes", &cfg->max_payload_bytes, 1, (1 << 30) - 1) < 0 ||
        cfg_get_string(st, r, "drivers_dir", &cfg->drivers_dir, 0) < 0 ||
        cfg_resolve_relative(st, cfg_member(r, "drivers_dir"), &cfg->drivers_dir) < 0 ||
        cfg_get_enum(st, r, "source", &source, sources) < 0)
        return;
    cfg->source = source;
    if (load_wal(st, cfg_member(r, "wal")) < 0)
        return;
    cfg->lease_ms = lease_s * 1000;
    cfg->ordering = ordering;
    cfg->on_dead = on_dead;
    cfg->retention = retention;
    const config_setting_t *b = cfg_member(r, "backoff");
    if (cfg_check_keys(st, b, "relay.backoff", backoff_keys) < 0 ||
        cfg_get_int(st, b, "initial_ms", &cfg->backoff_initial_ms, 1, 86400000) < 0 ||
        cfg_get_int(st, b, "max_ms", &cfg->backoff_max_ms, 1, 86400000) < 0 ||
        cfg_get_double(st, b, "multiplier", &cfg->backoff_multiplier, 1.0, 100.0) < 0 ||
        cfg_get_double(st, b, "jitter", &cfg->backoff_jitter, 0.0, 1.0) < 0)
        return;
    if (cfg->backoff_max_ms < cfg->backoff_initial_ms)
        cfg_fail(st, b, "relay.backoff.max_ms is below initial_ms");
}

void config_load_log(cfg_reader *st, const config_setting_t *l, const config_setting_t *m)
{
    static const char *const keys[] = {"level", "format", NULL};
    static const char *const mkeys[] = {"listen", NULL};
    static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
    static const char *const formats[] = {"text", "json", NULL};
    int level = st->cfg->log_level, format = st->cfg->log_format;
    if (cfg_check_keys(st, l, "log", keys) < 0 ||
        cfg_get_enum(st, l, "level", &level, levels) < 0 ||
        cfg_get_enum(st, l, "format", &format, formats) < 0 ||
        cfg_check_keys(st, m, "metrics", mkeys) < 0 ||
        cfg_get_string(st, m, "listen", &st->cfg->metrics_listen, 0) < 0)
        return;
    char why[256];
    if (st->cfg->metrics_listen &&
        listen_parse(st->cfg->metrics_listen, NULL, why, sizeof why) < 0) {
        cfg_fail(st, cfg_member(m, "listen"), "%s", why);
        return;
    }
    st->cfg->log_level = level;
    st->cfg->log_format = format;
}

void config_set_defaults(relay_config *cfg)
{
    cfg->schema = strdup("public");
    cfg->table = strdup("outbox");
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        *column_slot(&cfg->col, i) = strdup(column_names[i].name);
    cfg->workers = 1;
    cfg->batch_size = 500;
    cfg->lease_ms = 30000;
    cfg->poll_interval_ms = 1000;
    cfg->shutdown_timeout_ms = 10000;
    cfg->ordering = ORDERING_AGGREGATE;
    cfg->on_dead = DEAD_SKIP;
    cfg->max_attempts = 10;
    cfg->backoff_initial_ms = 500;
    cfg->backoff_max_ms = 300000;
    cfg->backoff_multiplier = 2.0;
    cfg->backoff_jitter = 0.2;
    cfg->retention = RETAIN_MARK;
    cfg->retention_hours = 168;
    cfg->max_payload_bytes = 1 << 20;
    cfg->source = SOURCE_POLL;
    cfg->wal_max_in_flight = 10000;
    cfg->wal_lag_warn_mb = 1024;
    cfg->wal_status_interval_ms = 1000;
    cfg->log_level = OBX_LOG_INFO;
    cfg->log_format = LOG_FORMAT_TEXT;
}

void config_free_columns(cfg_columns *col)
{
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        free(*column_slot(col, i));
}
