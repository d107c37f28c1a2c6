/* A dead event as the dead_letter output gets it: whatever the row holds,
 * even what could not become a message (a NULL field, headers that are not
 * a JSON object), with why it died in three more headers. */
#ifndef OBX_DEAD_MESSAGE_H
#define OBX_DEAD_MESSAGE_H

#include <libpq-fe.h>

#include "event/message.h"

/* The reader's columns (source.h, dead_events, with the payload's size
 * checked: NULL when it is over max_payload_bytes). */
enum {
    DEAD_KEY,
    DEAD_EVENT_ID,
    DEAD_EVENT_TYPE,
    DEAD_AGGREGATE_TYPE,
    DEAD_AGGREGATE_ID,
    DEAD_PAYLOAD,
    DEAD_HEADERS,
    DEAD_AT_US,
    DEAD_ATTEMPTS,
    DEAD_ERROR,
    DEAD_CREATED_US,
    DEAD_COLUMNS
};

/* Builds msg from row `row` of res (strings in a): the row's fields ("" for
 * NULL), payload (empty when NULL or over the limit), its headers when they
 * read, then dead_letter_error, dead_letter_attempts and dead_letter_at, and
 * where it goes: the dead_letter of the route the event takes, else cfg's
 * global one; *output is that output's index, and the destination its
 * template renders ("unknown" for an empty field). Returns 0, or -1 when
 * no dead_letter takes the event. */
int dead_message_build(const relay_config *cfg, payload_kind kind, const PGresult *res, int row,
                       arena *a, obx_message *msg, size_t *output);

#endif
