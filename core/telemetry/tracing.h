/* Tracing: a span per publish of an event whose headers carry a W3C
 * traceparent, the row's span as its parent, sent as OTLP/HTTP JSON to
 * tracing.otlp_endpoint by a thread of the process. The delivery core opens
 * a span when it hands a message to a driver and closes it with the
 * driver's answer. Off (every call a no-op) unless configured. */
#ifndef OBX_TRACING_H
#define OBX_TRACING_H

#include <stdint.h>

#include "config/config.h"
#include "obx/driver.h"

/* A traceparent's trace id and parent span id, as lowercase hex. */
typedef struct trace_context {
    char trace_id[33];
    char parent_id[17];
} trace_context;

/* 0 when s is a valid version-00 traceparent ("00-<32 hex>-<16 hex>-<2 hex>",
 * ids not all zero); -1 otherwise. */
int trace_context_parse(const char *s, trace_context *tc);

/* Starts the exporter when cfg names an endpoint. Returns 0, or -1 with err. */
int tracing_start(const relay_config *cfg, char *err, size_t err_size);
/* Sends what is queued and stops the exporter. */
void tracing_stop(void);

/* The spans a delivery has open, by token (thread-safe). */
typedef struct tracing_open tracing_open;
tracing_open *tracing_open_new(void);
void tracing_open_free(tracing_open *o);

/* Opens a span for m when tracing is on and m has a valid traceparent. */
void tracing_begin(tracing_open *o, const obx_message *m, const char *output, const char *system);
/* Closes token's span, if one is open: ok, or failed with detail. */
void tracing_end(tracing_open *o, uint64_t token, int ok, const char *detail);

#endif
