/* Loading the config's outputs and routes into st->cfg; errors go to st. */
#ifndef OBX_CONFIG_OUTPUTS_H
#define OBX_CONFIG_OUTPUTS_H

#include "config/config_read.h"

void config_load_outputs(cfg_reader *st, const config_setting_t *list);
/* Needs the outputs loaded: a route names one (the first when absent). */
void config_load_routes(cfg_reader *st, const config_setting_t *list);
/* dead_letter = { output = "name"; destination = "template"; } (optional). */
void config_load_dead_letter(cfg_reader *st, const config_setting_t *group);

#endif
