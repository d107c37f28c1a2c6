/* Turns a claimed row into a message: payload, headers, route, destination. */
#ifndef OBX_MESSAGE_H
#define OBX_MESSAGE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "arena.h"
#include "config.h"
#include "obx/driver.h"

typedef enum { PAYLOAD_JSON, PAYLOAD_TEXT, PAYLOAD_BYTES } payload_kind;

/* What a worker builds every message with. */
typedef struct message_source {
    const relay_config *cfg;
    payload_kind payload; /* the payload column's type */
    arena *scratch;       /* messages point into it until it is reset */
} message_source;

/* One row of a claim result (its columns are queries.h's ROW_*). */
typedef struct result_row {
    const PGresult *res;
    int index;
} result_row;

/* Builds msg from row. On success returns 0 and sets *output to the route's
 * output index. On a row that cannot become a message returns -1 with a
 * readable reason in err (the row is dead-lettered). */
int message_build(const message_source *src, result_row row, obx_message *msg, size_t *output,
                  char *err, size_t err_size);

/* One event's fields as text (NULL for SQL NULL) from a source other than a
 * claim: WAL mode's decoded inserts and emitted messages. The payload is in
 * the column type's text form (bytea as \x hex). */
typedef struct event_fields {
    const char *event_id, *aggregate_type, *aggregate_id, *event_type;
    const char *payload, *headers, *destination;
    size_t payload_len;
    long long created_at_us;
    unsigned attempt; /* 1 on the first */
} event_fields;

/* As message_build, from fields; poll mode's rows take the same path. */
int message_build_fields(const message_source *src, const event_fields *f, obx_message *msg,
                         size_t *output, char *err, size_t err_size);

#endif
