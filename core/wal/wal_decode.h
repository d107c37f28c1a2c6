/* pgoutput (protocol 1) decoded into what the relay needs: transaction
 * bounds, the outbox table's inserts and, when accepted, logical messages. */
#ifndef OBX_WAL_DECODE_H
#define OBX_WAL_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* An event's fields as text, in the outbox column types' text forms. */
enum {
    WF_EVENT_ID,
    WF_AGGREGATE_TYPE,
    WF_AGGREGATE_ID,
    WF_EVENT_TYPE,
    WF_PAYLOAD,
    WF_HEADERS,
    WF_DESTINATION,
    WF_CREATED_AT,
    WF_AGGREGATE_SEQ, /* from here on not kept by a dead letter's columns (dl_raw has them) */
    WF_EVENT_VERSION,
    WF_AVAILABLE_AT, /* enqueue's deliver_after: not sent before */
    WF_COUNT
};

/* One event: a single allocation (free() it), values point inside it. */
typedef struct wal_row {
    char *v[WF_COUNT]; /* NULL for SQL NULL */
    size_t len[WF_COUNT];
    long long created_at_us;
    long long available_at_us; /* 0: no such column or value */
    size_t size;               /* the allocation's bytes: the window's byte bound counts them */
    const char *invalid;       /* why it cannot be an event (static text), or NULL */
} wal_row;

/* One allocation holding a row and copies of its values (text forms; NULL
 * for SQL NULL); created_at and available_at parsed. */
wal_row *wal_row_new(const char *const *values, const size_t *lens);

typedef enum { WAL_NONE, WAL_BEGIN, WAL_COMMIT, WAL_EVENT } wal_change_kind;

typedef struct wal_change {
    wal_change_kind kind;
    uint64_t lsn;        /* COMMIT: the transaction's end, the position to confirm */
    long long commit_us; /* BEGIN: commit time, Unix microseconds */
    wal_row *row;        /* EVENT: the caller owns it */
} wal_change;

typedef struct wal_decoder {
    const relay_config *cfg;
    uint32_t relid; /* the outbox table's relation id, once announced */
    int have_relation;
    int column[WF_COUNT]; /* tuple index of each field, -1 when the table lacks it */
    char prefix[300];     /* the logical messages' prefix */
} wal_decoder;

void wal_decoder_init(wal_decoder *d, const relay_config *cfg);

/* Decodes one pgoutput message. Returns 0 (with out->kind WAL_NONE for what
 * the relay ignores) or -1 with err on a malformed or unusable message. */
int wal_decode(wal_decoder *d, const char *data, size_t len, wal_change *out, char *err,
               size_t err_size);

/* Logical messages with the relay's prefix ignored since start (not
 * accepted: relay.wal.accept_logical_messages). */
long long wal_ignored_messages(void);

/* "2026-12-01 15:12:22.123456+00" (ISO, any offset) as Unix microseconds; 0
 * when it cannot be read. */
long long wal_parse_timestamp(const char *text);

#endif
