/* The commands about drivers: `drivers` (what is found, with its options)
 * and `check-config`'s part that loads each output's driver and lets it
 * judge its options (create, destroy). Exit codes. */
#ifndef OBX_DRIVERS_CMD_H
#define OBX_DRIVERS_CMD_H

#include "config/config.h"

/* argv[0] is "drivers". */
int drivers_main(int argc, char **argv);
/* check-config of one source: its drivers loaded and each output's instance
 * created once; print: then every core setting's effective value; quiet: no
 * line when all is well (--json). */
int command_check_config(const relay_config *cfg, int print, int quiet);

#endif
