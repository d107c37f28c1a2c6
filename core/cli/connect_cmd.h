/* check-config --connect: what the config's checks cannot see, asked of the
 * servers themselves, so that a deploy can be gated on it. */
#ifndef OBX_CONNECT_CMD_H
#define OBX_CONNECT_CMD_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"

/* How long an output's broker has to answer its driver's probe. */
#define CONNECT_PROBE_TIMEOUT_MS 5000

/* For each source: connects with the config's role, checks the schema
 * version, the table privileges the source needs (source_kind.rights) and
 * what `run` checks before it starts (the source's preflight); then creates
 * each output's driver instance and probes it (obx_driver_def.probe): its
 * broker reached and logged in to. One line per failure on stderr, naming
 * the database or the output; json: one JSON object on stdout as well.
 * Returns 0, or 1 when something failed. The config checks (check-config
 * without --connect) are the caller's, before. */
int command_check_connect(relay_config *const *cfgs, size_t count, int json);

/* The tables the configured source works on (source_kind.rights) exist:
 * 0, or -1 with "table X is missing: run `outbox-relay init-db -c FILE`"
 * (or the error reading the catalog) in err. */
int connect_tables_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

#endif
