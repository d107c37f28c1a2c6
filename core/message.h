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

#endif
