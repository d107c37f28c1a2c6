/*
 * The test message factory: message i of a run has token i, event id
 * RRRRRRRR-SSSS-4000-8000-<i in hex>, aggregate PREFIX<i % aggregates>,
 * payload {"n": i} (n grows within an aggregate, which the delivery checker
 * relies on), the run's fixed headers and optionally a per-message header
 * NAME = PREFIX<i>.
 */
#ifndef OBX_TEST_MESSAGES_H
#define OBX_TEST_MESSAGES_H

#include <stddef.h>
#include <stdint.h>

#include "obx/driver.h"

#define MSG_MAX_HEADERS 6

typedef struct msg_shape {
    unsigned run;                 /* first group of the event id: tells runs apart */
    unsigned salt;                /* second group: tells sets of one run apart */
    size_t aggregates;            /* 0: 50 */
    const char *aggregate_prefix; /* NULL: "agg-" */
    const char *destination;
    const obx_header *headers; /* the same for every message, at most MSG_MAX_HEADERS - 2 */
    size_t header_count;
    const char *seq_header; /* when set: a header SEQ_HEADER = SEQ_PREFIX<i> */
    const char *seq_prefix;
    int64_t created_at_us; /* 0: now */
} msg_shape;

/* The strings one message points to; valid while it lives. A harness may
 * add headers to headers[] (up to MSG_MAX_HEADERS) and raise header_count. */
typedef struct msg_text {
    char event_id[48], aggregate_id[64], payload[64], seq[48];
    obx_header headers[MSG_MAX_HEADERS];
} msg_text;

/* Message I of SHAPE (token I, attempt 1) into m, its strings in text. */
void msg_make(const msg_shape *shape, uint64_t i, msg_text *text, obx_message *m);

/* N messages 0 .. N-1 of one shape, for harnesses that keep them all. */
typedef struct msg_set {
    size_t n;
    obx_message *m;
    msg_text *text;
} msg_set;

void msg_set_make(msg_set *s, size_t n, const msg_shape *shape);
void msg_set_free(msg_set *s);

#endif
