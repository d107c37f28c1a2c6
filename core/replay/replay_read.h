/* What a replay reads: the outbox rows its window selects (created_at in
 * [since, until), published as the source says, optionally of some
 * aggregates), in id order, a page at a time past the last id read. */
#ifndef OBX_REPLAY_READ_H
#define OBX_REPLAY_READ_H

#include <libpq-fe.h>

#include "config/config.h"
#include "event/event_row.h"
#include "event/message.h"

typedef struct replay_filter {
    const char *since, *until; /* timestamptz texts, as PostgreSQL resolved them */
    const char *types, *ids;   /* --aggregate TYPE/ID as two text[] literals, or NULL */
    long long max_id;          /* rows up to it: the newest at the replay's first start */
    const char *replayable;    /* the source's condition on row o: it was published */
} replay_filter;


/* Up to limit rows with id > after: rows[i] (the caller's, as the window
 * takes them) with its id in ids[i]. Returns how many, or -1 with err. */
int replay_read_page(PGconn *conn, const relay_config *cfg, const replay_filter *f, long long after,
                     int limit, long long *ids, event_row **rows, char *err, size_t err_size);

/* How many rows with id > after the filter selects; -1 with err. */
long long replay_count(PGconn *conn, const relay_config *cfg, const replay_filter *f,
                       long long after, char *err, size_t err_size);

/* The payload column's kind (json, text holding JSON, bytea). */
int replay_payload_kind(PGconn *conn, const relay_config *cfg, payload_kind *kind, char *err,
                        size_t err_size);

#endif
