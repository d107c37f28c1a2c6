/* The table of the core's settings and the checks its rows name. A new
 * setting is a row here (and its field in relay_config). */
#include "config/settings.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
#include "config/listen_addr.h"

static int check_conninfo(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                          void *slot)
{
    (void)def;
    /* libpq's own message would quote the text, password included */
    PQconninfoOption *parsed = conninfo_parse(*(char **)slot);
    if (!parsed)
        return cfg_fail(st, s,
                        "database.conninfo is not a valid libpq connection string or URI (check "
                        "its quoting and %%-escapes; libpq's message is not shown as it may hold "
                        "the password)");
    PQconninfoFree(parsed);
    return 0;
}

static int check_identifier(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                            void *slot)
{
    char path[128];
    setting_path(def, path, sizeof path);
    return cfg_check_identifier(st, s, path, *(char **)slot);
}

static int check_column(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                        void *slot)
{
    (void)def;
    return cfg_check_identifier(st, s, "column name", *(char **)slot);
}

/* A slot name as PostgreSQL takes it: lower-case letters, digits, underscores. */
static int check_slot_name(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                           void *slot)
{
    (void)def;
    const char *v = *(char **)slot;
    size_t n = strlen(v);
    int ok = n > 0 && n <= 63 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
    return ok ? 0
              : cfg_fail(
                    st, s,
                    "relay.wal.slot must be 1 to 63 lower-case letters, digits or underscores");
}

/* A partition span or age: "N hour(s)", "N day(s)" or "N week(s)", kept as
 * "1 hour" or "N hours" (PostgreSQL's interval text). No months: partitions are cut
 * with date_bin, which needs a fixed length. */
static int check_span(cfg_reader *st, const config_setting_t *s, const setting_def *def, void *slot)
{
    static const char *const units[] = {"hour", "day", "week", NULL};
    char **text = slot, unit[16] = "", path[128], rest;
    long n = 0;
    int ok = sscanf(*text, "%ld %15[a-z]%c", &n, unit, &rest) == 2 && n >= 1 && n <= 100000;
    size_t len = strlen(unit);
    if (ok && len > 1 && unit[len - 1] == 's')
        unit[--len] = '\0';
    int u = 0;
    while (ok && units[u] && strcmp(units[u], unit) != 0)
        u++;
    setting_path(def, path, sizeof path);
    if (!ok || !units[u])
        return cfg_fail(st, s,
                        "%s \"%s\": expected a count and a unit, such as \"1 day\" (hours, days "
                        "or weeks, 1 to 100000)",
                        path, *text);
    char canonical[48];
    snprintf(canonical, sizeof canonical, "%ld %s%s", n, units[u], n == 1 ? "" : "s");
    free(*text);
    *text = strdup(canonical);
    return 0;
}

static int check_relative_path(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                               void *slot)
{
    (void)def;
    return cfg_resolve_relative(st, s, (char **)slot);
}

static int check_listen(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                        void *slot)
{
    (void)def;
    char why[256];
    return listen_parse(*(char **)slot, NULL, why, sizeof why) < 0 ? cfg_fail(st, s, "%s", why) : 0;
}

static int check_http_url(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                          void *slot)
{
    (void)def;
    const char *url = *(char **)slot;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return cfg_fail(st, s,
                        "tracing.otlp_endpoint \"%s\": must be an http:// or https:// URL "
                        "(the collector's traces endpoint, e.g. http://127.0.0.1:4318/v1/traces)",
                        url);
    return 0;
}

/* The admin endpoint changes what the relays do: loopback only. */
static int check_admin_listen(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                              void *slot)
{
    (void)def;
    char why[256];
    struct sockaddr_in addr;
    if (listen_parse(*(char **)slot, &addr, why, sizeof why) != 0 ||
        (ntohl(addr.sin_addr.s_addr) >> 24) != 127)
        return cfg_fail(st, s,
                        "admin.listen \"%s\": must be 127.0.0.1:PORT or localhost:PORT (the "
                        "admin endpoint is bound to loopback)",
                        *(char **)slot);
    return 0;
}

/* The slot and publication default to names derived from the table:
 * "<table>_relay", folded to what a slot name may hold. */
static void derive_wal_names(cfg_reader *st, const config_setting_t *w)
{
    (void)w;
    relay_config *cfg = st->cfg;
    if (!cfg->wal_slot) {
        char name[64];
        snprintf(name, sizeof name, "%.*s_relay", 57, cfg->table);
        for (char *p = name; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
            else if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_", *p))
                *p = '_';
        cfg->wal_slot = strdup(name);
    }
    if (!cfg->wal_publication)
        cfg->wal_publication = strdup(cfg->wal_slot);
}

/* A partitioned outbox is kept by the poll source's cleanup or the cursor
 * source's upkeep; unset keep follows relay.retention_hours (0: partitions
 * are never dropped). The WAL source makes partitions ahead but retires
 * none: no row of it says published, so keep is refused there. */
static void check_partitions(cfg_reader *st, const config_setting_t *p)
{
    relay_config *cfg = st->cfg;
    if (!p)
        return;
    if (cfg->source == SOURCE_WAL) {
        if (cfg->partition_keep)
            cfg_fail(st, p,
                     "relay.partitions.keep needs source = \"poll\" or \"cursor\": WAL mode "
                     "makes partitions ahead but does not drop old ones");
        return;
    }
    if (!cfg->partition_keep && cfg->retention_hours > 0) {
        char keep[32];
        snprintf(keep, sizeof keep, "%d hours", cfg->retention_hours);
        cfg->partition_keep = strdup(keep);
    }
}

/* A shard of the cursor source: a bit mask of an aggregate's hash picks it,
 * so the count is a power of two (docs/sources.md, Cursor mode). */
static void check_cursor_shard(cfg_reader *st, const config_setting_t *c)
{
    const relay_config *cfg = st->cfg;
    if (!c)
        return;
    if (cfg->source != SOURCE_CURSOR)
        cfg_fail(st, c, "relay.cursor needs source = \"cursor\"");
    else if (cfg->cursor_shards & (cfg->cursor_shards - 1))
        cfg_fail(st, c, "relay.cursor.shards must be a power of two (1, 2, 4 ... 1024)");
    else if (cfg->cursor_shard >= cfg->cursor_shards)
        cfg_fail(st, c, "relay.cursor.shard must be below shards (0 to shards - 1)");
}

static void check_backoff_order(cfg_reader *st, const config_setting_t *b)
{
    if (st->cfg->backoff_max_ms < st->cfg->backoff_initial_ms)
        cfg_fail(st, b, "relay.backoff.max_ms is below initial_ms");
}

static const char *const orderings[] = {"aggregate", "none", NULL};
static const char *const policies[] = {"skip", "block", NULL};
static const char *const retentions[] = {"mark", "delete", NULL};
static const char *const sources[] = {"poll", "wal", "cursor", NULL};
static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const formats[] = {"text", "json", NULL};

#define AT(field) .offset = offsetof(relay_config, field)
#define INT(sec, name, field, lo, hi, dflt, rl)                                                    \
    {                                                                                              \
        .section = sec, .key = name, .type = SETTING_INT, AT(field), .min = lo, .max = hi,         \
        .def = dflt, .reload = rl                                                                  \
    }
#define DOUBLE(sec, name, field, lo, hi, dflt, rl)                                                 \
    {                                                                                              \
        .section = sec, .key = name, .type = SETTING_DOUBLE, AT(field), .min = lo, .max = hi,      \
        .def = dflt, .reload = rl                                                                  \
    }
#define ENUM(sec, name, field, list, dflt, rl)                                                     \
    {                                                                                              \
        .section = sec, .key = name, .type = SETTING_ENUM, AT(field), .choices = list,             \
        .def = dflt, .reload = rl                                                                  \
    }
#define BOOL(sec, name, field, dflt, rl)                                                           \
    {                                                                                              \
        .section = sec, .key = name, .type = SETTING_BOOL, AT(field), .def = dflt, .reload = rl    \
    }
#define STRING(sec, name, field, dflt, rl, ...)                                                    \
    {                                                                                              \
        .section = sec, .key = name, .type = SETTING_STRING, AT(field), .text = dflt,              \
        .reload = rl, __VA_ARGS__                                                                  \
    }
#define COLUMN(name)                                                                               \
    STRING("database.columns", #name, col.name, #name, SETTING_FIXED, .check = check_column),
#define LIVE SETTING_LIVE
#define FIXED SETTING_FIXED

/* Fixed: what the sessions, statements, buffers, threads and listener were
 * made with at start; a reload keeps the running value. */
/* clang-format off */
static const setting_def table[] = {
    STRING("database", "conninfo", conninfo, NULL, FIXED, .secret = 1, .check = check_conninfo,
           .required = "database.conninfo is required (a libpq connection string or URI)"),
    STRING("database", "schema", schema, "public", FIXED, .check = check_identifier),
    STRING("database", "table", table, "outbox", FIXED, .check = check_identifier),
    CFG_COLUMNS(COLUMN)
    INT("relay", "workers", workers, 1, 256, 1, FIXED),
    INT("relay", "batch_size", batch_size, 1, 100000, 500, FIXED),
    {.section = "relay", .key = "lease_seconds", .type = SETTING_INT, AT(lease_ms), .min = 1,
     .max = 86400, .def = 30, .scale = 1000, .reload = FIXED},
    INT("relay", "poll_interval_ms", poll_interval_ms, 1, 3600000, 1000, LIVE),
    INT("relay", "shutdown_timeout_ms", shutdown_timeout_ms, 0, 3600000, 10000, FIXED),
    /* how long a claim's transaction may wait for acknowledgements: it holds the
     * database's xmin horizon (every table's dead rows) while it is open */
    INT("relay", "max_transaction_ms", max_transaction_ms, 100, 3600000, 5000, LIVE),
    ENUM("relay", "ordering", ordering, orderings, ORDERING_AGGREGATE, FIXED),
    ENUM("relay", "on_dead", on_dead, policies, DEAD_SKIP, FIXED),
    INT("relay", "max_attempts", max_attempts, 1, 1000000, 10, LIVE),
    /* an output that refuses everything is an outage (core/host/health.h) */
    BOOL("relay", "circuit_breaker", circuit_breaker, 0, LIVE),
    ENUM("relay", "retention", retention, retentions, RETAIN_MARK, FIXED),
    INT("relay", "retention_hours", retention_hours, 0, 1000000, 168, FIXED),
    INT("relay", "max_payload_bytes", max_payload_bytes, 1, (1 << 30) - 1, 1 << 20, LIVE),
    /* poll mode: a batch's rows, in MiB (at least one row, however large) */
    INT("relay", "max_batch_mb", max_batch_mb, 1, 1 << 20, 32, FIXED),
    STRING("relay", "drivers_dir", drivers_dir, NULL, LIVE, .check = check_relative_path,
           .derived = "the built-in drivers directory"),
    ENUM("relay", "source", source, sources, SOURCE_POLL, FIXED),
    STRING("relay.wal", "slot", wal_slot, NULL, FIXED, .check = check_slot_name,
           .derived = "database.table + \"_relay\""),
    STRING("relay.wal", "publication", wal_publication, NULL, FIXED, .check = check_identifier,
           .derived = "relay.wal.slot"),
    /* a shard: init-db publishes only the rows this SQL condition holds for (PostgreSQL 15
     * row filter); written by the operator, as trusted as the conninfo */
    STRING("relay.wal", "row_filter", wal_row_filter, NULL, FIXED),
    INT("relay.wal", "max_in_flight", wal_max_in_flight, 1, 1000000, 10000, FIXED),
    INT("relay.wal", "max_in_flight_mb", wal_max_in_flight_mb, 1, 1 << 20, 256, FIXED),
    INT("relay.wal", "lag_warn_mb", wal_lag_warn_mb, 1, 1 << 30, 1024, FIXED),
    INT("relay.wal", "status_interval_ms", wal_status_interval_ms, 10, 60000, 1000, FIXED),
    /* pg_logical_emit_message with the relay's prefix as an event: any role that can connect
     * may send one, so only where every such role may publish (docs/security.md) */
    BOOL("relay.wal", "accept_logical_messages", wal_accept_logical_messages, 0, FIXED),
    INT("relay.cursor", "shards", cursor_shards, 1, 1024, 1, FIXED),
    INT("relay.cursor", "shard", cursor_shard, 0, 1023, 0, FIXED),
    /* a time-partitioned outbox, made by init-db and kept by the relay (docs/operations.md,
     * Partitioned outbox) */
    STRING("relay.partitions", "interval", partition_interval, NULL, FIXED, .check = check_span,
           .required = "relay.partitions needs interval, such as \"1 day\" (hours, days or weeks)"),
    INT("relay.partitions", "ahead", partition_ahead, 1, 1000, 3, FIXED),
    STRING("relay.partitions", "keep", partition_keep, NULL, FIXED, .check = check_span,
           .derived = "relay.retention_hours (0: never dropped)"),
    INT("relay.backoff", "initial_ms", backoff_initial_ms, 1, 86400000, 500, LIVE),
    INT("relay.backoff", "max_ms", backoff_max_ms, 1, 86400000, 300000, LIVE),
    DOUBLE("relay.backoff", "multiplier", backoff_multiplier, 1.0, 100.0, 2.0, LIVE),
    DOUBLE("relay.backoff", "jitter", backoff_jitter, 0.0, 1.0, 0.2, LIVE),
    ENUM("log", "level", log_level, levels, OBX_LOG_INFO, FIXED),
    ENUM("log", "format", log_format, formats, LOG_FORMAT_TEXT, FIXED),
    STRING("metrics", "listen", metrics_listen, NULL, FIXED, .check = check_listen),
    STRING("admin", "listen", admin_listen, NULL, FIXED, .check = check_admin_listen),
    STRING("admin", "token_env", admin_token_env, "OUTBOX_RELAY_ADMIN_TOKEN", FIXED,
           .check = check_identifier),
    /* a span per publish of an event that carries a traceparent (docs/configuration.md, Tracing) */
    STRING("tracing", "otlp_endpoint", otlp_endpoint, NULL, FIXED, .check = check_http_url),
    STRING("tracing", "service_name", service_name, "outbox-relay", FIXED),
};

static const setting_section sections[] = {
    {.path = "database", .missing = "the database section is missing: database = { conninfo = \"...\"; };"},
    {.path = "database.columns", .shape = "{ id = \"...\"; ... }"},
    {.path = "relay"},
    {.path = "relay.wal", .after = derive_wal_names},
    {.path = "relay.cursor", .after = check_cursor_shard},
    {.path = "relay.partitions", .after = check_partitions},
    {.path = "relay.backoff", .after = check_backoff_order},
    {.path = "log"},
    {.path = "metrics"},
    {.path = "admin"},
    {.path = "tracing"},
};
/* clang-format on */

#define ROWS (sizeof table / sizeof table[0])
_Static_assert(ROWS <= CFG_SETTINGS_MAX, "relay_config.from_file has a flag per row");
/* enum settings are stored through an int */
_Static_assert(sizeof(ordering_mode) == sizeof(int) && sizeof(dead_policy) == sizeof(int) &&
                   sizeof(retention_mode) == sizeof(int) && sizeof(relay_source) == sizeof(int) &&
                   sizeof(obx_log_level) == sizeof(int) && sizeof(log_format) == sizeof(int),
               "enum settings are ints");

const setting_def *settings_table(size_t *count)
{
    *count = ROWS;
    return table;
}

const setting_section *settings_sections(size_t *count)
{
    *count = sizeof sections / sizeof sections[0];
    return sections;
}
