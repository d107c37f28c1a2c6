/* Loading the config's sections into st->cfg; errors go to st. */
#ifndef OBX_CONFIG_SECTIONS_H
#define OBX_CONFIG_SECTIONS_H

#include "config.h"
#include "config_read.h"

/* Every setting's default, before the file is read. */
void config_set_defaults(relay_config *cfg);
void config_free_columns(cfg_columns *col);

void config_load_database(cfg_reader *st, const config_setting_t *db);
void config_load_relay(cfg_reader *st, const config_setting_t *r);
/* The log and metrics sections (either may be NULL: defaults stay). */
void config_load_log(cfg_reader *st, const config_setting_t *l, const config_setting_t *m);

#endif
