/* The metrics endpoint: Prometheus text on http://LISTEN/metrics. */
#ifndef OBX_METRICS_H
#define OBX_METRICS_H

#include <stddef.h>

#include "host/source_set.h"

typedef struct metrics_server metrics_server;

/* Limits that keep idle or slow clients from taking the relay's descriptors
 * (at most half of them) or starving the probes: so many connections are
 * served at once that idle and slow clients do not queue /healthz behind them
 * in the kernel's backlog; beyond the limit the backlog holds new clients.
 * One address gets at most three quarters of them. Idle connections close
 * after METRICS_TIMEOUT_S; each one's memory is bounded. */
#define METRICS_MIN_CONNECTIONS 16
#define METRICS_MAX_CONNECTIONS 1024
#define METRICS_TIMEOUT_S 5
#define METRICS_CONNECTION_MEMORY (16 * 1024)

/* The connection limit for this process: half the descriptor limit, within
 * METRICS_MIN_CONNECTIONS..METRICS_MAX_CONNECTIONS. */
unsigned metrics_connection_limit(void);

/* Starts serving the counters of set's sources on LISTEN. NULL with err on
 * failure. */
metrics_server *metrics_start(source_set *set, const char *listen, char *err, size_t err_size);

/* A server without a listening socket: connections come from
 * metrics_add_connection (the fuzz target hands it one end of a socketpair). */
metrics_server *metrics_start_detached(source_set *set, char *err, size_t err_size);
/* Serves FD (now owned by the server). Returns 0, or -1 when refused. */
int metrics_add_connection(metrics_server *srv, int fd);

void metrics_stop(metrics_server *srv);

#endif
