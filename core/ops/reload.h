/* Live reload: re-reads the config file, keeps the settings that cannot
 * change while the relay runs, and publishes a new config generation that
 * the workers switch to between batches. An invalid file changes nothing. */
#ifndef OBX_RELOAD_H
#define OBX_RELOAD_H

#include "host/relay_state.h"

/* From the engine's thread (the only one that publishes generations), with
 * cfg, st's source as the file now has it (taken), or NULL and why it could
 * not be loaded. Returns 0 when a new generation was published, -1 when the
 * running config stays (the reason is logged, with file:line for a config
 * error). */
int reload_config(relay_state *st, relay_config *cfg, const char *why);

/* `outbox-relay reload -c FILE`: SIGHUP to every `outbox-relay run` whose
 * -c names the same file (found in /proc). Returns the exit code. */
int reload_signal_relays(const char *config_path);

#endif
