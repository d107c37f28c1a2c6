/* The /metrics body: Prometheus text format 0.0.4, from the totals, each
 * output's health and (when st->metrics is set) the counters' measures (telemetry/counters.h). */
#ifndef OBX_METRICS_RENDER_H
#define OBX_METRICS_RENDER_H

#include <stddef.h>

#include "host/relay_state.h"

/* A malloc'd body (its length in *len), or NULL when out of memory. */
char *metrics_render(relay_state *st, size_t *len);

#endif
