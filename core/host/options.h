/* Driver options as the host enforces them: the declarations (obx_option and,
 * since ABI 1.1, the parallel obx_option_spec array), an output's values
 * checked against them, and the values the getters hand to a driver. */
#ifndef OBX_OPTIONS_H
#define OBX_OPTIONS_H

#include <stdio.h>

#include "config/config.h"
#include "obx/driver.h"

/* The declared option NAME, or NULL. */
const obx_option *options_find(const obx_driver_def *def, const char *name);

/* The spec of o (an element of def->options); NULL for a driver without specs. */
const obx_option_spec *options_spec(const obx_driver_def *def, const obx_option *o);

/* Checks the driver's own declarations: parallel specs, ranges, choices, and
 * defaults that parse and are allowed. Returns 0, or -1 with the first bug
 * in err ("option \"x\": ..."). A driver without specs passes. */
int options_check_specs(const obx_driver_def *def, char *err, size_t err_size);

/* Checks an output's values against the declarations: unknown names, types,
 * ranges, choices, required ones, old names (warned, or refused when the new
 * name is set too), deprecated ones (warned). Returns 0, or -1 with
 * "FILE:LINE: ..." in err. Assumes options_check_specs passed. */
int options_validate(const relay_config *cfg, const cfg_output *output, const obx_driver_def *def,
                     char *err, size_t err_size);

/* What a getter returns for NAME: the output's value (written under NAME or
 * its old name), else the declared default. Returns 1 and fills *out (only
 * the member of its type) when there is a value of type TYPE, else 0. */
int options_value(const obx_driver_def *def, const cfg_output *output, const char *name,
                  obx_option_type type, cfg_value *out);

/* The allowed values in words: "1 .. 100", "one of \"a\", \"b\"", or "". */
void options_describe_allowed(const obx_option *o, const obx_option_spec *s, char *buf,
                              size_t size);

/* The option table of `outbox-relay drivers -v`. */
void options_print_table(FILE *out, const obx_driver_def *def);

#endif
