#include "event/message.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "event/json_scan.h"
#include "event/route.h"

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

long long message_decode_bytea(arena *scratch, const char *text, size_t len, const void **out)
{
    if (len < 2 || text[0] != '\\' || text[1] != 'x' || (len - 2) % 2)
        return -1;
    size_t n = (len - 2) / 2;
    unsigned char *raw = arena_alloc(scratch, n ? n : 1);
    for (size_t k = 0; k < n; k++) {
        int hi = hex_digit(text[2 + 2 * k]), lo = hex_digit(text[3 + 2 * k]);
        if (hi < 0 || lo < 0)
            return -1;
        raw[k] = (unsigned char)(hi << 4 | lo);
    }
    *out = raw;
    return (long long)n;
}

/* The payload column as the driver gets it: bytea decoded, text checked to
 * hold JSON, within max_payload_bytes. */
static int read_payload(const message_source *src, const char *payload, size_t len,
                        obx_message *msg, char *err, size_t err_size)
{
    if (!payload) {
        snprintf(err, err_size, "payload is NULL"); /* tombstones = true: message_build */
        return -1;
    }
    if (src->payload == PAYLOAD_BYTES) { /* bytea arrives as \x hex text */
        const void *raw;
        long long n = message_decode_bytea(src->scratch, payload, len, &raw);
        if (n < 0) {
            snprintf(err, err_size, "payload: cannot decode bytea");
            return -1;
        }
        payload = (const char *)raw;
        len = (size_t)n;
    } else if (src->payload == PAYLOAD_TEXT) {
        char why[200];
        if (json_check(payload, len, why, sizeof why) < 0) {
            snprintf(err, err_size, "payload is not valid JSON: %s", why);
            return -1;
        }
    }
    if (len > (size_t)src->cfg->max_payload_bytes) {
        snprintf(err, err_size, "payload of %zu bytes exceeds max_payload_bytes (%d)", len,
                 src->cfg->max_payload_bytes);
        return -1;
    }
    msg->payload = payload;
    msg->payload_len = len;
    msg->content_type =
        src->payload == PAYLOAD_BYTES ? "application/octet-stream" : "application/json";
    return 0;
}

int message_header_reserved(const char *key)
{
    /* the envelope in every driver's spelling (obx/envelope.h), the content
     * type, Debezium's "id" (Kafka), CloudEvents' attributes (ce_ on Kafka,
     * ce- on HTTP, cloudEvents_ / cloudEvents: on AMQP) */
    static const char *const names[] = {
        "event_id",     "event_type",     "aggregate_type",  "aggregate_id",  "created_at",
        "attempt",      "aggregate_seq",  "event_version",   "event-id",      "event-type",
        "aggregate-type", "aggregate-id", "created-at",      "aggregate-seq", "event-version",
        "x-event-id",   "x-event-type",   "x-aggregate-type", "x-aggregate-id", "x-created-at",
        "x-attempt",    "x-aggregate-seq", "x-event-version", "content_type", "content-type",
        "id",           NULL};
    static const char *const prefixes[] = {"ce_", "ce-", "cloudevents_", "cloudevents:", NULL};
    for (const char *const *n = names; *n; n++)
        if (strcasecmp(key, *n) == 0)
            return 1;
    for (const char *const *p = prefixes; *p; p++)
        if (strncasecmp(key, *p, strlen(*p)) == 0)
            return 1;
    return 0;
}

/* Drops the row's headers the relay sets itself (one it sent beside the
 * relay's own would be the one a "last header" reader takes); logged once
 * per process. Returns how many were dropped. */
static size_t drop_reserved_headers(obx_message *msg)
{
    static atomic_int logged;
    size_t kept = 0, dropped = 0;
    obx_header *h = (obx_header *)msg->headers;
    for (size_t i = 0; i < msg->header_count; i++) {
        if (!message_header_reserved(h[i].key)) {
            h[kept++] = h[i];
            continue;
        }
        if (dropped++ == 0 && atomic_exchange(&logged, 1) == 0)
            log_warn("event %s: its header \"%.64s\" is one the relay sets: dropped (this and "
                     "every later such header, unlogged; docs/security.md)",
                     msg->event_id, h[i].key);
    }
    msg->header_count = kept;
    return dropped;
}

void message_ext_build(const event_fields *f, obx_message_ext *x)
{
    *x =
        (obx_message_ext){sizeof *x, f->aggregate_seq > 0 ? f->aggregate_seq : 0, f->event_version};
}

int message_build(const message_source *src, const event_fields *f, obx_message *msg,
                  const cfg_route **route_out, char *err, size_t err_size)
{
    memset(msg, 0, sizeof *msg);
    msg->event_id = f->event_id;
    msg->event_type = f->event_type;
    msg->aggregate_type = f->aggregate_type;
    msg->aggregate_id = f->aggregate_id;
    msg->created_at_us = f->created_at_us;
    msg->attempt = f->attempt;
    if (!msg->event_id || !msg->event_type || !msg->aggregate_type || !msg->aggregate_id) {
        snprintf(err, err_size,
                 "event_id, event_type, aggregate_type and aggregate_id must not be NULL");
        return -1;
    }
    /* the payload first (its error comes before the others'); a NULL one
     * waits for the route: a tombstone where its output takes them */
    if (f->payload && read_payload(src, f->payload, f->payload_len, msg, err, err_size) < 0)
        return -1;
    if (f->headers && json_read_headers(f->headers, src->scratch, msg, err, err_size) < 0)
        return -1;
    drop_reserved_headers(msg);
    const cfg_route *route = route_for(src->cfg, msg);
    if (!route) {
        snprintf(err, err_size, "no route matches event_type \"%s\", aggregate_type \"%s\"",
                 msg->event_type, msg->aggregate_type);
        return -1;
    }
    *route_out = route;
    if (route->drop) {
        snprintf(err, err_size, "dropped by the route at %s:%d", src->cfg->path, route->line);
        return MESSAGE_DROPPED;
    }
    const relay_config *cfg = src->cfg;
    if (!f->payload &&
        !(route->output_index < cfg->output_count && cfg->outputs[route->output_index].tombstones))
        return read_payload(src, NULL, 0, msg, err, err_size); /* "payload is NULL" */
    if (route_shape_headers(route, msg, src->scratch, err, err_size) < 0)
        return -1;
    const char *override = f->destination;
    if (override && *override) {
        msg->destination = override;
        return 0;
    }
    if (route_render(route->destination, msg, src->scratch, &msg->destination, err, err_size) < 0)
        return -1;
    if (!*msg->destination) {
        snprintf(err, err_size, "destination is empty (route at %s:%d)", src->cfg->path,
                 route->line);
        return -1;
    }
    return 0;
}
