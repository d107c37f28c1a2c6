/*
 * Checks made before a message is handed to librdkafka, so that an event
 * the cluster can never take is refused with its own reason instead of
 * failing a request that carries other events too: the topic name's
 * legality (Kafka's rules) and the message's size against
 * message.max.bytes, counted as librdkafka counts it.
 */
#include <stdio.h>
#include <string.h>

#include "kafka_int.h"

#define KAFKA_TOPIC_MAX_LEN 249

int kafka_topic_illegal(const char *name, char *why, size_t why_size)
{
    size_t len = strlen(name);
    if (len == 0) {
        snprintf(why, why_size, "illegal topic name: empty");
        return 1;
    }
    if (!strcmp(name, ".") || !strcmp(name, "..")) {
        snprintf(why, why_size, "illegal topic name \"%s\": \".\" and \"..\" are not allowed",
                 name);
        return 1;
    }
    if (len > KAFKA_TOPIC_MAX_LEN) {
        snprintf(why, why_size, "illegal topic name \"%.40s...\": %zu characters, at most %d", name,
                 len, KAFKA_TOPIC_MAX_LEN);
        return 1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok) {
            /* the name is cut before the bad byte: it may not be printable */
            snprintf(why, why_size,
                     "illegal topic name \"%.*s...\": byte 0x%02x at position %zu (allowed: "
                     "a-z A-Z 0-9 . _ -)",
                     (int)(i < 60 ? i : 60), name, c, i + 1);
            return 1;
        }
    }
    return 0;
}

/* Bytes of a zig-zag varint of v (Kafka's record fields). */
static size_t kafka_varint_size(int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

size_t kafka_wire_size(size_t key_len, size_t value_len, const rd_kafka_headers_t *hdrs)
{
    size_t size = KAFKA_RECORD_MAX_OVERHEAD + key_len + value_len;
    const char *name;
    const void *value;
    size_t value_size;
    for (size_t i = 0; hdrs && !rd_kafka_header_get_all(hdrs, i, &name, &value, &value_size); i++) {
        size_t name_len = strlen(name);
        size += name_len + value_size + kafka_varint_size((int64_t)name_len) +
                kafka_varint_size((int64_t)value_size);
    }
    return size;
}

uint64_t kafka_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}
