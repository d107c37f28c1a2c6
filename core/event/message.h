/* Builds a message from one event's fields, whatever the source read them
 * from: payload, headers, route, destination. Knows no row layout and no
 * database client. */
#ifndef OBX_MESSAGE_H
#define OBX_MESSAGE_H

#include <string.h>

#include <stddef.h>

#include "base/arena.h"
#include "config/config.h"
#include "obx/driver.h"

typedef enum { PAYLOAD_JSON, PAYLOAD_TEXT, PAYLOAD_BYTES } payload_kind;

/* The kind of a payload column of type type ("jsonb", "bytea"...): any other
 * type is text, checked to hold JSON. */
static inline payload_kind payload_kind_of(const char *type)
{
    return !strcmp(type, "bytea")                            ? PAYLOAD_BYTES
           : !strcmp(type, "json") || !strcmp(type, "jsonb") ? PAYLOAD_JSON
                                                             : PAYLOAD_TEXT;
}

/* What a source builds every message with. */
typedef struct message_source {
    const relay_config *cfg;
    payload_kind payload; /* the payload column's type */
    arena *scratch;       /* messages point into it until it is reset */
} message_source;

/* One event's fields as text (NULL for SQL NULL). The payload is in the
 * column type's text form (bytea as \x hex). */
typedef struct event_fields {
    const char *event_id, *aggregate_type, *aggregate_id, *event_type;
    const char *payload, *headers, *destination;
    size_t payload_len;
    long long created_at_us;
    unsigned attempt;          /* 1 on the first */
    long long aggregate_seq;   /* 0: none */
    const char *event_version; /* NULL: none */
} event_fields;

/* 1 when a row's header named key is dropped: a name the relay or a driver
 * sets (the envelope, the content type, CloudEvents' ce_ / ce- /
 * cloudEvents_ names), compared without case. */
int message_header_reserved(const char *key);

/* message_build's answer for an event a drop route matched. */
#define MESSAGE_DROPPED 1

/* Builds msg from f. On success returns 0 and sets *route to the route it
 * takes (its output_index is the output). An event a drop route matches
 * returns MESSAGE_DROPPED with *route set and why in err: it is counted and
 * marked done, never offered. On an event that cannot become a message
 * returns -1 with a readable reason in err (it is dead-lettered). */
int message_build(const message_source *src, const event_fields *f, obx_message *msg,
                  const cfg_route **route, char *err, size_t err_size);

/* bytea's hex text form (\x...; sessions pin bytea_output = hex) into raw
 * bytes in scratch. Returns the length, or -1 when the text is not that. */
long long message_decode_bytea(arena *scratch, const char *text, size_t len, const void **out);

/* The fields of f a driver reads through host->message_ext. */
void message_ext_build(const event_fields *f, obx_message_ext *x);

#endif
