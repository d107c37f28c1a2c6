/* The engine's statements, rendered for the configured table and prepared
 * once per connection. */
#ifndef OBX_QUERIES_H
#define OBX_QUERIES_H

#include <libpq-fe.h>

#include "config/config.h"

/* Columns of a claimed row, in the order the claim returns them. */
enum {
    ROW_ID,
    ROW_EVENT_ID,
    ROW_AGGREGATE_TYPE,
    ROW_AGGREGATE_ID,
    ROW_EVENT_TYPE,
    ROW_PAYLOAD,
    ROW_HEADERS,
    ROW_DESTINATION,
    ROW_CREATED_US,
    ROW_AGGREGATE_SEQ, /* NULL before the column was filled (rows of an upgrade) */
    ROW_EVENT_VERSION,
    ROW_ATTEMPTS,
    ROW_PAYLOAD_BYTES, /* NULL when small; the payload is NULL when over the limit */
    ROW_TID,           /* where the claim read the row version (the mark finds it there) */
    ROW_AFTER_TYPE,    /* ordered claims: where the next walk starts (NULL: the first) */
    ROW_AFTER_ID,
    ROW_HEADS, /* ordered claims: how many heads the walk took */
    ROW_DUE    /* ordered claims: false where a run waits (a retry); NULL: due */
};

/* Parameters of the claim statements. */
enum {
    CLAIM_BATCH,
    CLAIM_MAX_PAYLOAD,
    CLAIM_AFTER_TYPE, /* ordered: the aggregate to start after */
    CLAIM_AFTER_ID,
    CLAIM_RUN,
    CLAIM_HEADS,
    CLAIM_PARAMS
};
#define CLAIM_AFTER_ROW CLAIM_AFTER_TYPE /* unordered: the id to start after */
#define CLAIM_PARAMS_UNORDERED (CLAIM_AFTER_ROW + 1)

/* Prepares every statement on conn ("claim", "record", "mark", "renew",
 * "pending") for the payload column's type. Returns 0 or -1 with err. */
int queries_prepare(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                    size_t err_size);

/* Does the "mark" statement return the ids it recorded (after an ordered
 * claim, whose runs are not locked) rather than how many? */
int queries_mark_returns_ids(const relay_config *cfg);

#endif
