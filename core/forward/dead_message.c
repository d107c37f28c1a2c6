#include "forward/dead_message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event/json_scan.h"
#include "event/route.h"

static const char *field(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col);
}

static void payload(payload_kind kind, const PGresult *res, int row, arena *a, obx_message *msg)
{
    const char *text =
        PQgetisnull(res, row, DEAD_PAYLOAD) ? NULL : PQgetvalue(res, row, DEAD_PAYLOAD);
    size_t len = text ? (size_t)PQgetlength(res, row, DEAD_PAYLOAD) : 0;
    const void *raw;
    long long n;
    msg->content_type = kind == PAYLOAD_BYTES ? "application/octet-stream" : "application/json";
    if (text && kind == PAYLOAD_BYTES && (n = message_decode_bytea(a, text, len, &raw)) >= 0) {
        msg->payload = raw;
        msg->payload_len = (size_t)n;
        return;
    }
    msg->payload = text ? text : "";
    msg->payload_len = len;
    char why[100];
    if (kind != PAYLOAD_BYTES && len && json_check(text, len, why, sizeof why) < 0)
        msg->content_type = "application/octet-stream"; /* it died for not being JSON */
}

/* The row's headers, when they read, and the three that say why it died. */
static void headers(const PGresult *res, int row, arena *a, obx_message *msg)
{
    char err[256];
    obx_message parsed = {0};
    if (!PQgetisnull(res, row, DEAD_HEADERS) &&
        json_read_headers(PQgetvalue(res, row, DEAD_HEADERS), a, &parsed, err, sizeof err) < 0)
        parsed.header_count = 0; /* not an object of scalars: sent without them */
    obx_header *h = arena_alloc(a, (parsed.header_count + 3) * sizeof *h);
    if (parsed.header_count)
        memcpy(h, parsed.headers, parsed.header_count * sizeof *h);
    size_t n = parsed.header_count;
    long long us = atoll(field(res, row, DEAD_AT_US));
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    char at[40];
    gmtime_r(&secs, &tm);
    size_t k = strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(at + k, sizeof at - k, ".%06lldZ", us % 1000000);
    h[n++] = (obx_header){"dead_letter_error", field(res, row, DEAD_ERROR)};
    h[n++] = (obx_header){"dead_letter_attempts", field(res, row, DEAD_ATTEMPTS)};
    h[n++] = (obx_header){"dead_letter_at", arena_strndup(a, at, strlen(at))};
    msg->headers = h;
    msg->header_count = n;
}

int dead_message_build(const relay_config *cfg, payload_kind kind, const PGresult *res, int row,
                       arena *a, obx_message *msg, size_t *output)
{
    memset(msg, 0, sizeof *msg);
    msg->event_id = field(res, row, DEAD_EVENT_ID);
    msg->event_type = field(res, row, DEAD_EVENT_TYPE);
    msg->aggregate_type = field(res, row, DEAD_AGGREGATE_TYPE);
    msg->aggregate_id = field(res, row, DEAD_AGGREGATE_ID);
    msg->created_at_us = atoll(field(res, row, DEAD_CREATED_US));
    msg->attempt = 1;
    payload(kind, res, row, a, msg);
    headers(res, row, a, msg);
    /* the template names row fields; an empty one renders as "unknown" */
    obx_message named = *msg;
    const char **f[] = {&named.event_id, &named.event_type, &named.aggregate_type,
                        &named.aggregate_id};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!**f[i])
            *f[i] = "unknown";
    const cfg_route *route = route_for(cfg, msg);
    const char *destination = cfg->dead_letter_destination;
    *output = cfg->dead_letter_output_index;
    if (route && route->dead_letter_output) {
        destination = route->dead_letter_destination;
        *output = route->dead_letter_output_index;
    } else if (!cfg->dead_letter_output) {
        return -1;
    }
    char err[256];
    if (route_render(destination, &named, a, &msg->destination, err, sizeof err) < 0)
        msg->destination = destination; /* not reached: fields are set */
    return 0;
}
