/* The metrics endpoint: Prometheus text on http://LISTEN/metrics. */
#ifndef OBX_METRICS_H
#define OBX_METRICS_H

#include "engine.h"

typedef struct metrics_server metrics_server;

/* Starts serving eng's counters on "host:port". NULL with err on failure. */
metrics_server *metrics_start(engine *eng, const char *listen, char *err, size_t err_size);
void metrics_stop(metrics_server *srv);

#endif
