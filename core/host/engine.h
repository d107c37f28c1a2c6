/* The relay engine: N workers, each claiming, publishing and recording;
 * a cleanup thread; signals; the metrics endpoint. */
#ifndef OBX_ENGINE_H
#define OBX_ENGINE_H

#include "config.h"

/* Runs until stopped (signal) or drained. Returns the process exit code. */
int engine_run(const relay_config *cfg, int drain);

#endif
