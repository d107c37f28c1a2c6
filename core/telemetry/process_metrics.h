/* The series a Prometheus client library gives every process (process_*:
 * CPU, memory, file descriptors, start time) and the build's identity
 * (outbox_relay_build_info), rendered once per scrape, whatever the
 * number of outboxes. */
#ifndef OBX_PROCESS_METRICS_H
#define OBX_PROCESS_METRICS_H

#include <stdio.h>

void process_metrics_render(FILE *f);

#endif
