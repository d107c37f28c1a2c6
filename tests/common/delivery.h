/*
 * The delivery checker of the test consumers: given what a consumer
 * received, in order (event id, aggregate, and the event's sequence within
 * its aggregate when the consumer knows it), counts distinct events,
 * duplicates and per-aggregate order breaks (a first delivery whose
 * sequence is not above the highest one its aggregate had so far), and
 * from an expected count the events lost.
 */
#ifndef OBX_TEST_DELIVERY_H
#define OBX_TEST_DELIVERY_H

#include <stddef.h>
#include <stdint.h>

typedef enum delivery_verdict {
    DELIVERY_FIRST,        /* a new event, in order (or without a sequence) */
    DELIVERY_DUPLICATE,    /* an event id seen before */
    DELIVERY_OUT_OF_ORDER, /* a new event behind a later one of its aggregate */
} delivery_verdict;

typedef struct delivery delivery;

/* NAME prefixes the first few order breaks printed on stderr. */
delivery *delivery_new(const char *name);
void delivery_free(delivery *d);

/* One delivery; ids and aggregates are byte strings (not NUL-terminated).
 * SEQ < 0: the consumer does not know the sequence (no order check). */
delivery_verdict delivery_add(delivery *d, const char *event_id, size_t id_len,
                              const char *aggregate, size_t aggregate_len, int64_t seq);

size_t delivery_received(const delivery *d);
size_t delivery_unique(const delivery *d);
size_t delivery_duplicates(const delivery *d);
size_t delivery_order_breaks(const delivery *d);
/* Aggregates seen with a sequence. */
size_t delivery_aggregates(const delivery *d);
/* Expected events that never arrived. */
size_t delivery_lost(const delivery *d, size_t expected);

#endif
