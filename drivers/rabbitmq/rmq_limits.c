/*
 * RabbitMQ driver: limits a message must fit before anything of it is sent.
 *
 * A publish is a method frame, then a header frame with the properties
 * (headers included), then body frames. rabbitmq-c writes the method frame
 * before it encodes the header frame: properties too large for one frame
 * fail after the broker has the method, and the connection is useless (the
 * broker expects a header frame). And a short string over 255 bytes makes
 * the broker close the connection. Either way every unconfirmed message
 * would fail with it, and the event, sent again, would do it again. So both
 * are checked first, and only that event is refused.
 */
#include <stdio.h>
#include <string.h>

#include "rmq_limits.h"

#define RMQ_SHORTSTR_MAX 255 /* AMQP short strings: names, keys, property texts */
/* A header frame around the properties: type, channel, size (7), class,
 * weight, body size (12), frame end (1). */
#define RMQ_HEADER_FRAME_OVERHEAD 20

/* Does a short-string field fit? Else why, with the field's start (cut on a
 * UTF-8 character boundary). */
static int rmq_fits(const char *what, const char *text, size_t len, char *why, size_t why_size)
{
    if (len <= RMQ_SHORTSTR_MAX)
        return 1;
    size_t shown = 40;
    while (shown > 0 && ((unsigned char)text[shown] & 0xC0) == 0x80)
        shown--;
    snprintf(why, why_size,
             "%s is %zu bytes, over the AMQP limit of %d for a short string: \"%.*s...\"", what,
             len, RMQ_SHORTSTR_MAX, (int)shown, text);
    return 0;
}

int rmq_names_fit(const obx_instance *inst, const obx_message *m, amqp_bytes_t exchange,
                  amqp_bytes_t routing_key, char *why, size_t why_size)
{
    const char *ct = m->content_type ? m->content_type : inst->content_type_default;
    if (!rmq_fits("exchange", exchange.bytes, exchange.len, why, why_size) ||
        !rmq_fits("routing key", routing_key.bytes, routing_key.len, why, why_size) ||
        !rmq_fits("event type", m->event_type, strlen(m->event_type), why, why_size) ||
        !rmq_fits("event id", m->event_id, strlen(m->event_id), why, why_size) ||
        (ct && !rmq_fits("content type", ct, strlen(ct), why, why_size)))
        return 0;
    for (size_t i = 0; i < m->header_count; i++)
        if (!rmq_fits("header key", m->headers[i].key, strlen(m->headers[i].key), why, why_size))
            return 0;
    return 1;
}

/* The encoded size of a table of string values (the only kind the driver sends). */
static size_t rmq_table_size(const amqp_table_t *t)
{
    size_t n = 4; /* its length */
    for (int i = 0; i < t->num_entries; i++)
        n += 1 + t->entries[i].key.len + 1 + 4 + t->entries[i].value.value.bytes.len;
    return n;
}

static size_t rmq_shortstr_size(amqp_flags_t flags, amqp_flags_t flag, amqp_bytes_t s)
{
    return (flags & flag) ? 1 + s.len : 0;
}

int rmq_properties_fit(const obx_instance *inst, const amqp_basic_properties_t *p, char *why,
                       size_t why_size)
{
    amqp_flags_t f = p->_flags;
    size_t headers = (f & AMQP_BASIC_HEADERS_FLAG) ? rmq_table_size(&p->headers) : 0;
    size_t size = 2 /* flags */ + headers +
                  rmq_shortstr_size(f, AMQP_BASIC_CONTENT_TYPE_FLAG, p->content_type) +
                  rmq_shortstr_size(f, AMQP_BASIC_CONTENT_ENCODING_FLAG, p->content_encoding) +
                  ((f & AMQP_BASIC_DELIVERY_MODE_FLAG) ? 1 : 0) +
                  ((f & AMQP_BASIC_PRIORITY_FLAG) ? 1 : 0) +
                  rmq_shortstr_size(f, AMQP_BASIC_CORRELATION_ID_FLAG, p->correlation_id) +
                  rmq_shortstr_size(f, AMQP_BASIC_REPLY_TO_FLAG, p->reply_to) +
                  rmq_shortstr_size(f, AMQP_BASIC_EXPIRATION_FLAG, p->expiration) +
                  rmq_shortstr_size(f, AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id) +
                  ((f & AMQP_BASIC_TIMESTAMP_FLAG) ? 8 : 0) +
                  rmq_shortstr_size(f, AMQP_BASIC_TYPE_FLAG, p->type) +
                  rmq_shortstr_size(f, AMQP_BASIC_USER_ID_FLAG, p->user_id) +
                  rmq_shortstr_size(f, AMQP_BASIC_APP_ID_FLAG, p->app_id) +
                  rmq_shortstr_size(f, AMQP_BASIC_CLUSTER_ID_FLAG, p->cluster_id);
    int frame_max = amqp_get_frame_max(inst->conn);
    size_t room =
        frame_max > RMQ_HEADER_FRAME_OVERHEAD ? (size_t)frame_max - RMQ_HEADER_FRAME_OVERHEAD : 0;
    if (size <= room)
        return 1;
    snprintf(why, why_size,
             "headers too large: the message properties are %zu bytes (headers %zu), over the "
             "%zu bytes one frame holds with the broker's frame_max of %d",
             size, headers, room, frame_max);
    return 0;
}
