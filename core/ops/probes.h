/* /healthz and /readyz: JSON bodies and their HTTP status.
 *   healthz: the process runs and every engine thread made progress within
 *            its bound (telemetry/counters.h heartbeats); 503 names the stuck threads.
 *   readyz:  the last backlog poll reached the database and no output is
 *            paused as unavailable; 503 names each reason. */
#ifndef OBX_PROBES_H
#define OBX_PROBES_H

#include "host/relay_state.h"

/* Each returns 200 or 503 and a malloc'd JSON body in *body (NULL when out
 * of memory). */
int probe_health(relay_state *st, char **body);
int probe_ready(relay_state *st, char **body);

#endif
