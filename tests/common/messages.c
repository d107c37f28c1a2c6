/* The test message factory: see messages.h. */
#include "messages.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void msg_make(const msg_shape *shape, uint64_t i, msg_text *text, obx_message *m)
{
    size_t aggs = shape->aggregates ? shape->aggregates : 50;
    size_t nh = shape->header_count;
    snprintf(text->event_id, sizeof text->event_id, "%08x-%04x-4000-8000-%012" PRIx64, shape->run,
             shape->salt & 0xffffu, i & 0xffffffffffffu);
    snprintf(text->aggregate_id, sizeof text->aggregate_id, "%s%" PRIu64,
             shape->aggregate_prefix ? shape->aggregate_prefix : "agg-", i % aggs);
    int len = snprintf(text->payload, sizeof text->payload, "{\"n\": %" PRIu64 "}", i);
    if (nh > MSG_MAX_HEADERS - 2)
        nh = MSG_MAX_HEADERS - 2;
    for (size_t k = 0; k < nh; k++)
        text->headers[k] = shape->headers[k];
    if (shape->seq_header) {
        snprintf(text->seq, sizeof text->seq, "%s%" PRIu64,
                 shape->seq_prefix ? shape->seq_prefix : "", i);
        text->headers[nh++] = (obx_header){shape->seq_header, text->seq};
    }
    *m = (obx_message){.token = i,
                       .event_id = text->event_id,
                       .event_type = "order.created",
                       .aggregate_type = "Order",
                       .aggregate_id = text->aggregate_id,
                       .destination = shape->destination,
                       .payload = text->payload,
                       .payload_len = (size_t)len,
                       .content_type = "application/json",
                       .created_at_us = shape->created_at_us
                                            ? shape->created_at_us
                                            : (int64_t)time(NULL) * 1000000 + 123456,
                       .headers = text->headers,
                       .header_count = nh,
                       .attempt = 1};
}

void msg_set_make(msg_set *s, size_t n, const msg_shape *shape)
{
    s->n = n;
    s->m = calloc(n ? n : 1, sizeof *s->m);
    s->text = calloc(n ? n : 1, sizeof *s->text);
    for (size_t i = 0; i < n; i++)
        msg_make(shape, i, &s->text[i], &s->m[i]);
}

void msg_set_free(msg_set *s)
{
    free(s->m);
    free(s->text);
    s->m = NULL;
    s->text = NULL;
    s->n = 0;
}
