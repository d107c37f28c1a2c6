/* One event read from the outbox as text (the WAL stream, the cursor's
 * reads, replay): the row every ordered reader feeds the window. */
#ifndef OBX_EVENT_ROW_H
#define OBX_EVENT_ROW_H

#include <stddef.h>

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
typedef struct event_row {
    char *v[WF_COUNT]; /* NULL for SQL NULL */
    size_t len[WF_COUNT];
    long long created_at_us;
    long long available_at_us; /* 0: no such column or value */
    size_t size;               /* the allocation's bytes: the window's byte bound counts them */
    const char *invalid;       /* why it cannot be an event (static text), or NULL */
} event_row;

/* One allocation holding a row and copies of its values (text forms; NULL
 * for SQL NULL); created_at and available_at parsed. */
event_row *event_row_new(const char *const *values, const size_t *lens);

/* "2026-12-01 15:12:22.123456+00" (ISO, any offset) as Unix microseconds; 0
 * when it cannot be read. */
long long event_parse_timestamp(const char *text);

#endif
