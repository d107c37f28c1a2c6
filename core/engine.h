/* The relay engine: N workers, each claiming, publishing and recording. */
#ifndef OBX_ENGINE_H
#define OBX_ENGINE_H

#include <stdatomic.h>

#include "config.h"
#include "loader.h"
#include "message.h"

typedef struct engine {
    const relay_config *cfg;
    loaded_driver **drivers; /* one per output */
    payload_kind payload;
    int drain;              /* exit once nothing is pending */
    char owner_prefix[128]; /* host:pid:nonce, made unique per worker */

    atomic_int stop;         /* 1: stop claiming and finish; set by signals */
    atomic_int failed;       /* a worker could not start: exit non-zero */
    atomic_llong stop_at_ms; /* when stop was requested (monotonic) */

    /* totals for the exit summary and the metrics endpoint */
    atomic_llong claimed, published, retried, dead, released;
} engine;

/* Runs until stopped (signal) or drained. Returns the process exit code. */
int engine_run(const relay_config *cfg, int drain);

/* Requests a graceful stop (async-signal-safe). */
void engine_request_stop(void);

/* Milliseconds on the monotonic clock. */
long long now_ms(void);

#endif
