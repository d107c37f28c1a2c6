/* `replay`: publishes already-published events again (docs/commands.md, Replay). */
#ifndef OBX_REPLAY_CMD_H
#define OBX_REPLAY_CMD_H

#include "host/source.h"

/* argv[0] is "replay"; source_of is the source registry (run/sources.h).
 * Returns the exit code. */
int replay_main(int argc, char **argv, const source_kind *(*source_of)(const relay_config *cfg));

#endif
