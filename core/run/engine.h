/* The relay engine: N workers, each claiming, publishing and recording;
 * a cleanup thread; signals; the metrics endpoint. */
#ifndef OBX_ENGINE_H
#define OBX_ENGINE_H

#include "config/config.h"

/* Relays every outbox of cfgs (config_load_all's: the file's sources, or
 * its one outbox; taken, with the array) until stopped (signal) or each is
 * drained. Returns the process exit code. */
int engine_run(relay_config **cfgs, size_t count, int drain);

#endif
