/* The engine's statements, rendered for the configured table and prepared
 * once per connection. */
#ifndef OBX_QUERIES_H
#define OBX_QUERIES_H

#include <libpq-fe.h>

#include "config.h"

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
    ROW_ATTEMPTS
};

/* Outcome codes the record statement understands. RELEASE and DEFER do not
 * count an attempt: the message never reached the broker. */
enum { REC_PUBLISHED = 0, REC_RETRY = 1, REC_DEAD = 2, REC_RELEASE = 3, REC_DEFER = 4 };

/* Prepares every statement on conn ("claim", "record", "mark", "renew",
 * "hold", "pending"). Returns 0 or -1 with err. */
int queries_prepare(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

/* Reads the payload column's type: "jsonb", "json", "bytea", "text"... into
 * out. Returns 0 or -1 with err. */
int queries_payload_type(PGconn *conn, const relay_config *cfg, char *out, size_t out_size,
                         char *err, size_t err_size);

#endif
