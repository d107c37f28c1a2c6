/* The metrics endpoint: Prometheus text on http://LISTEN/metrics. */
#ifndef OBX_METRICS_H
#define OBX_METRICS_H

#include "state.h"

typedef struct metrics_server metrics_server;

/* Starts serving the relay's counters on "host:port". NULL with err on failure. */
metrics_server *metrics_start(relay_state *st, const char *listen, char *err, size_t err_size);
void metrics_stop(metrics_server *srv);

#endif
