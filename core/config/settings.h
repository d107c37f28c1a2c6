/* The core's settings (database, relay, log, metrics) as one table: a row
 * per setting gives its path, type, place in relay_config, range, default,
 * choices and whether a reload may change it. The loader, the defaults,
 * config_free, reload's fixed list, the column lookup and check-config
 * --print all walk this table; outputs and routes are read elsewhere
 * (config_outputs.c). */
#ifndef OBX_SETTINGS_H
#define OBX_SETTINGS_H

#include <stddef.h>

#include "config/config.h"
#include "config/config_read.h"

typedef enum {
    SETTING_INT,
    SETTING_DOUBLE,
    SETTING_STRING,
    SETTING_ENUM,
    SETTING_BOOL
} setting_type;
typedef enum { SETTING_LIVE, SETTING_FIXED } setting_reload;

typedef struct setting_def setting_def;

/* A check beyond type and range, run on a value the file set; slot is its
 * place in relay_config. Returns -1 after cfg_fail. */
typedef int (*setting_check)(cfg_reader *st, const config_setting_t *s, const setting_def *def,
                             void *slot);

struct setting_def {
    const char *section; /* "relay.backoff" */
    const char *key;     /* "initial_ms" */
    setting_type type;
    size_t offset;              /* of the value in relay_config (int, double, char * or enum) */
    double min, max;            /* numbers: the range, in the file's unit */
    double def;                 /* numbers: the default in the file's unit; enums: its choice */
    int scale;                  /* numbers: stored = read * scale (seconds kept as ms); 0: 1 */
    const char *text;           /* strings: the default (NULL: none, or see derived) */
    const char *const *choices; /* enums, NULL-terminated; stored as the index */
    setting_reload reload;
    int secret;           /* never printed as written (the conninfo's password) */
    const char *required; /* the error when the section lacks it (NULL: optional) */
    setting_check check;
    const char *derived; /* how a missing value is filled after loading, for --print */
};

/* A group of settings. */
typedef struct setting_section {
    const char *path;
    const char *missing; /* the error when the file lacks it (NULL: optional) */
    const char *shape;   /* shown when it is not a group (NULL: the generic text) */
    /* after its rows are read (group NULL when absent): derived values and
     * checks across rows */
    void (*after)(cfg_reader *st, const config_setting_t *group);
} setting_section;

/* The table, in loading order (which decides the first error reported). */
const setting_def *settings_table(size_t *count);
const setting_section *settings_sections(size_t *count);

/* "relay.backoff.initial_ms" */
void setting_path(const setting_def *def, char *out, size_t cap);

/* Every setting's default, before the file is read. */
void settings_set_defaults(relay_config *cfg);
/* Frees the string settings. */
void settings_free(relay_config *cfg);

/* Reads every section of the table from root (the file's top level):
 * known keys, types, ranges, choices, required values and checks. A value
 * the overlay (a source of `sources`, or NULL) sets wins over root's. */
void settings_load(cfg_reader *st, const config_setting_t *root, const config_setting_t *overlay);

/* Puts back, in cfg, the running value of each fixed setting that differs
 * in it, calling kept(path) for each (never with the value: the conninfo
 * may hold a password). Returns how many were kept. */
int settings_keep_fixed(relay_config *cfg, const relay_config *run, void (*kept)(const char *path));

#endif
