#include "message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"
#include "queries.h"
#include "route.h"

/* A column's text, or NULL for SQL NULL. */
static const char *row_value(result_row row, int col)
{
    return PQgetisnull(row.res, row.index, col) ? NULL : PQgetvalue(row.res, row.index, col);
}

/* The payload column as the driver gets it: bytea decoded, text checked to
 * hold JSON, within max_payload_bytes. */
static int read_payload(const message_source *src, const char *payload, size_t len,
                        obx_message *msg, char *err, size_t err_size)
{
    if (!payload) {
        snprintf(err, err_size, "payload is NULL");
        return -1;
    }
    if (src->payload == PAYLOAD_BYTES) { /* bytea arrives as \x hex text */
        unsigned char *raw = PQunescapeBytea((const unsigned char *)payload, &len);
        if (!raw) {
            snprintf(err, err_size, "payload: cannot decode bytea");
            return -1;
        }
        void *copy = arena_alloc(src->scratch, len ? len : 1);
        memcpy(copy, raw, len);
        PQfreemem(raw);
        payload = copy;
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

int message_build(const message_source *src, result_row row, obx_message *msg, size_t *output,
                  char *err, size_t err_size)
{
    event_fields f = {
        .event_id = row_value(row, ROW_EVENT_ID),
        .aggregate_type = row_value(row, ROW_AGGREGATE_TYPE),
        .aggregate_id = row_value(row, ROW_AGGREGATE_ID),
        .event_type = row_value(row, ROW_EVENT_TYPE),
        .payload = row_value(row, ROW_PAYLOAD),
        .headers = row_value(row, ROW_HEADERS),
        .destination = row_value(row, ROW_DESTINATION),
        .payload_len = PQgetlength(row.res, row.index, ROW_PAYLOAD),
        .created_at_us = strtoll(PQgetvalue(row.res, row.index, ROW_CREATED_US), NULL, 10),
        .attempt = (unsigned)strtoul(PQgetvalue(row.res, row.index, ROW_ATTEMPTS), NULL, 10) + 1,
    };
    return message_build_fields(src, &f, msg, output, err, err_size);
}

int message_build_fields(const message_source *src, const event_fields *f, obx_message *msg,
                         size_t *output, char *err, size_t err_size)
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
    if (read_payload(src, f->payload, f->payload_len, msg, err, err_size) < 0)
        return -1;
    if (f->headers && json_read_headers(f->headers, src->scratch, msg, err, err_size) < 0)
        return -1;
    const cfg_route *route = route_for(src->cfg, msg);
    if (!route) {
        snprintf(err, err_size, "no route matches event_type \"%s\", aggregate_type \"%s\"",
                 msg->event_type, msg->aggregate_type);
        return -1;
    }
    *output = route->output_index;
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
