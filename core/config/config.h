/* Configuration: one libconfig file, validated fully at load. */
#ifndef OBX_CONFIG_H
#define OBX_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/log.h"

typedef enum { ORDERING_AGGREGATE, ORDERING_NONE } ordering_mode;
typedef enum { DEAD_SKIP, DEAD_BLOCK } dead_policy;
typedef enum { RETAIN_MARK, RETAIN_DELETE } retention_mode;
typedef enum { SOURCE_POLL, SOURCE_WAL, SOURCE_CURSOR } relay_source;

/* A driver option value as written in the file (already env-expanded). */
typedef struct cfg_value {
    char *name;
    int type; /* obx_option_type */
    char *s;
    int64_t i;
    double d;
    int b;
    int line;
} cfg_value;

typedef struct cfg_pair {
    char *key;
    char *value;
} cfg_pair;

typedef struct cfg_output {
    char *name;
    char *driver;
    int line;
    cfg_value *options;
    size_t option_count;
    cfg_pair *properties; /* native client properties, passed through */
    size_t property_count;
    int routed;            /* a route (not a drop route) names it: the workers need an instance */
    int tombstones;        /* a NULL payload goes out as the protocol's null value (a tombstone) */
    int one_per_aggregate; /* poll mode sends it no run of an aggregate, only heads */
    int dead_letter;       /* a dead_letter group (the global one, a route's) names it */
} cfg_output;

/* A route's condition on one header of the row: present, value matching glob. */
typedef struct cfg_header_match {
    char *name;
    char *glob;
} cfg_header_match;

/* A route's shaping of the row's headers, applied in this order. */
typedef enum { HEADER_DROP, HEADER_RENAME, HEADER_SET } header_rule_kind;
typedef struct cfg_header_rule {
    header_rule_kind kind;
    char *name;  /* DROP: a glob on names; RENAME and SET: a name */
    char *value; /* RENAME: the new name; SET: a template over the row's fields */
} cfg_header_rule;

typedef struct cfg_route {
    char *event_type;     /* glob; "*" when absent */
    char *aggregate_type; /* glob; "*" when absent */
    char *output;         /* "" for a drop route */
    size_t output_index;  /* the config's output_count for a drop route */
    char *destination;    /* template with ${event_type} etc. */
    int line;
    cfg_header_match *headers; /* all must match */
    size_t header_count;
    int drop;               /* matching events are counted and marked done, never published */
    cfg_header_rule *shape; /* drop_headers, rename_headers, set_headers, in that order */
    size_t shape_count;
    /* the route's own dead_letter = { output; destination; } (NULL output:
     * the global one's, if any) */
    char *dead_letter_output;
    size_t dead_letter_output_index;
    char *dead_letter_destination;
    /* fan-out: output = ["a", "b"] as written (config_fanout.c turns the
     * route into a copy to a table per output) */
    char **fanout;
    size_t fanout_count;
} cfg_route;

/* The outbox table's columns, each mappable for an existing table: this one
 * list makes cfg_columns, the database.columns settings (whose defaults are
 * these names) and what sql_render's {c.NAME} accepts. */
/* clang-format off */
#define CFG_COLUMNS(X)                                                                             \
    X(id) X(event_id) X(aggregate_type) X(aggregate_id) X(event_type) X(payload) X(headers)       \
    X(destination) X(created_at) X(available_at) X(attempts) X(lease_owner) X(lease_until)        \
    X(published_at) X(dead_at) X(last_error) X(aggregate_seq) X(event_version)
/* clang-format on */

typedef struct cfg_columns {
#define CFG_COLUMN_FIELD(name) char *name;
    CFG_COLUMNS(CFG_COLUMN_FIELD)
#undef CFG_COLUMN_FIELD
} cfg_columns;

/* Room for a flag per row of the settings table (settings.c asserts it). */
#define CFG_SETTINGS_MAX 96

typedef struct relay_config {
    char *path;
    char *source_name; /* its entry's name in `sources`; NULL: the file lists none */
    char *fanout_of;   /* a fan-out target's source (config_fanout.c): the source it copies from */

    char *conninfo; /* secret: may hold a password, never printed unmasked */
    char *schema;   /* "public" by default */
    char *table;    /* "outbox" by default */
    cfg_columns col;

    int workers;
    int batch_size;
    int max_batch_mb; /* poll mode: a batch's rows' bytes, in MiB (at least one row) */
    int lease_ms;
    int poll_interval_ms;
    int shutdown_timeout_ms;
    int max_transaction_ms; /* a batch awaiting acknowledgements longer is given back */
    ordering_mode ordering;
    dead_policy on_dead;
    int circuit_breaker; /* refusals for good judged by the output's health first */
    int max_attempts;
    int backoff_initial_ms;
    int backoff_max_ms;
    double backoff_multiplier;
    double backoff_jitter; /* 0..1: fraction of the delay randomised */
    retention_mode retention;
    int retention_hours; /* published rows older than this are deleted (mark mode); 0 = keep */
    int max_payload_bytes;
    /* relay.partitions: the outbox is range-partitioned on created_at and the
     * relay keeps it (NULL interval: a plain table) */
    char *partition_interval; /* "1 day": each partition's span (hours, days or weeks) */
    int partition_ahead;      /* partitions made this many spans ahead of now */
    char *partition_keep;     /* a fully published partition older than this is dropped;
                                 NULL: never */
    char *drivers_dir;        /* NULL: loader_default_dir() */

    relay_source source;             /* "poll" (claims) or "wal" (logical replication) */
    char *wal_slot;                  /* WAL mode: the logical replication slot */
    char *wal_publication;           /* WAL mode: the publication of the outbox table */
    char *wal_row_filter;            /* WAL mode: the publication's WHERE (a shard); NULL: none */
    int wal_max_in_flight;           /* WAL mode: events held unfinished at once */
    int wal_max_in_flight_mb;        /* WAL mode: and their rows' bytes, in MiB */
    int wal_lag_warn_mb;             /* WAL mode: warn when the slot holds more WAL than this */
    int wal_status_interval_ms;      /* WAL mode: standby status update at least this often */
    int wal_accept_logical_messages; /* WAL mode: pg_logical_emit_message with the prefix is an
                                        event (any role that can connect may send one) */
    int cursor_shards;               /* cursor mode: the outbox split by aggregate hash in this
                                        many shards (a power of two) */
    int cursor_shard;                /* cursor mode: the shard this relay reads, below shards */

    obx_log_level log_level;
    log_format log_format;
    char *metrics_listen;  /* "host:port" or NULL */
    char *admin_listen;    /* loopback "host:port" or NULL: the admin endpoint is off */
    char *admin_token_env; /* the environment variable holding its bearer token */
    char *otlp_endpoint;   /* tracing: OTLP/HTTP traces URL, or NULL: no spans */
    char *service_name;    /* tracing: the spans' service.name */

    cfg_output *outputs;
    size_t output_count;
    cfg_route *routes;
    size_t route_count;

    /* dead_letter = { output; destination; }: dead events are also published
     * there (NULL output: they stay in the database only) */
    char *dead_letter_output;
    size_t dead_letter_output_index;
    char *dead_letter_destination; /* template, as a route's */

    /* Per row of the settings table: 1 when the file set it, 0 for the default. */
    unsigned char from_file[CFG_SETTINGS_MAX];
} relay_config;

/* Loads and validates path. On error returns NULL and writes
 * "FILE:LINE: what is wrong" to err (never a secret value). */
/* The config of the file's one outbox (a file without `sources`, or with
 * one), or of its source named name (NULL: the only one). */
relay_config *config_load(const char *path, char *err, size_t err_size);
relay_config *config_load_source(const char *path, const char *name, char *err, size_t err_size);
/* Every source's config, in the file's order (one when it lists none);
 * NULL with err on an error. config_free_all frees them and the array. */
relay_config **config_load_all(const char *path, size_t *count, char *err, size_t err_size);
void config_free_all(relay_config **cfgs, size_t count);
void config_free(relay_config *cfg);
void config_free_route(cfg_route *r);

/* The mapped name of column name[0..len) (a CFG_COLUMNS name), or NULL. */
const char *config_column(const relay_config *cfg, const char *name, size_t len);

/* check-config --print: each core setting as "path = value", marking the
 * defaults and the fixed ones; a conninfo's password is shown as ***. */
void config_print_settings(FILE *out, const relay_config *cfg);

/* Finds a driver option of an output by name, or NULL. */
const cfg_value *config_output_option(const cfg_output *out, const char *name);

#endif
