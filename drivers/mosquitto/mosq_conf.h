/* mosquitto driver: its options, read and checked into the instance; the url. */
#ifndef OBX_MOSQ_CONF_H
#define OBX_MOSQ_CONF_H

#include <stddef.h>

#include "mosq_int.h"
#include "mqc_conf.h"

extern const obx_option mosq_options[];
extern const obx_option_spec mosq_option_specs[];
/* Reads and checks the options into inst; -1 with errstr (never a secret). */
int mosq_read_options(mosq_inst *inst, char *errstr, size_t errstr_size);

/* Parses tcp:// mqtt:// ssl:// mqtts:// [user[:password]@]host[:port] (host
 * may be [v6]); -1 with errstr. mosq_url.c */
int mosq_url_parse(const char *url, mosq_url *out, char *errstr, size_t errstr_size);

#endif
