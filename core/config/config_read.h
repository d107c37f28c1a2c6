/* Reading libconfig settings while loading the relay's config: typed values
 * with ranges, ${VAR} expansion, known keys only, and the first error as
 * "FILE:LINE: what is wrong". Used by the section and output loaders. */
#ifndef OBX_CONFIG_READ_H
#define OBX_CONFIG_READ_H

#include <libconfig.h>
#include <stddef.h>

#include "config/config.h"

/* Loading state: the first error wins and stops the load. */
typedef struct cfg_reader {
    relay_config *cfg;
    char *err;
    size_t err_size;
    int failed;
} cfg_reader;

/* Records the first error at s's line (or the file alone when s is NULL);
 * always returns -1. */
int cfg_fail(cfg_reader *st, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A copy of in with ${NAME} and ${NAME:-default} expanded from the
 * environment; with keep_fields, ${field} naming a row field is kept for the
 * router. NULL after an error. */
char *cfg_expand(cfg_reader *st, const config_setting_t *s, const char *in, int keep_fields);
/* keep_fields values: row fields (destinations), or those of a CloudEvents
 * template option (obx/cloudevents.h: ${destination} too); any other driver
 * option keeps them too (a driver may take it as a template and checks it
 * itself), while an unset environment variable is an error as usual */
#define CFG_KEEP_ROW 1
#define CFG_KEEP_CE 2
#define CFG_KEEP_OPTION 3

/* Is name[0..len) a row field a destination template may name? */
int cfg_is_row_field(const char *name, size_t len);

/* Refuses a group that is not one, or members not in allowed (NULL-terminated). */
int cfg_check_keys(cfg_reader *st, const config_setting_t *group, const char *what,
                   const char *const *allowed);

/* The member of group (NULL-safe), or NULL. */
const config_setting_t *cfg_member(const config_setting_t *group, const char *name);

/* Typed readers: 0 when absent, 1 when read into *dst, -1 on an error. */
int cfg_get_string(cfg_reader *st, const config_setting_t *group, const char *name, char **dst,
                   int keep_fields);
int cfg_get_int(cfg_reader *st, const config_setting_t *group, const char *name, int *dst,
                long long min, long long max);
int cfg_get_double(cfg_reader *st, const config_setting_t *group, const char *name, double *dst,
                   double min, double max);
int cfg_get_bool(cfg_reader *st, const config_setting_t *group, const char *name, int *dst);
/* A string that must be one of choices (NULL-terminated); *dst = its index. */
int cfg_get_enum(cfg_reader *st, const config_setting_t *group, const char *name, int *dst,
                 const char *const *choices);

/* Identifiers are quoted when used in SQL; refuses only what cannot be right. */
int cfg_check_identifier(cfg_reader *st, const config_setting_t *s, const char *what,
                         const char *v);

/* Makes a relative *path relative to the config file, not to wherever the
 * relay was started. */
int cfg_resolve_relative(cfg_reader *st, const config_setting_t *s, char **path);

/* Resolves a relative PATH from the config file against that file's
 * directory (an absolute PATH, or a CONFIG_PATH without a directory, is kept
 * as is). Returns -1 when OUT is too small. */
int config_resolve_path(const char *config_path, const char *path, char *out, size_t out_size);

#endif
