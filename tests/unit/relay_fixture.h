/* A relay's shared state for the engine's unit tests: a config loaded from
 * text (outputs on the real memory driver, loaded through the loader), its
 * generation 0 (drivers, health) and the metrics, as the engine builds them,
 * with no database and no worker thread. */
#ifndef OBX_UNIT_RELAY_FIXTURE_H
#define OBX_UNIT_RELAY_FIXTURE_H

#include "host/relay_state.h"

/* The outputs of every fixture, by index: the routes send event type
 * "NAME.*" to output NAME. */
enum {
    OUT_PLAIN,    /* completes inside publish_batch */
    OUT_LATE,     /* completes only when closed (an hour's delay) */
    OUT_REFUSING, /* refuses event type "refusing.no" with a reason */
    OUT_FATAL,    /* its instance fails after one accepted message */
    OUT_DOWN,     /* unavailable while the fixture's down file exists */
    OUT_FLAKY,    /* completes event type "flaky.always" as retriable */
    OUT_COUNT
};

typedef struct relay_fixture {
    char dir[64];        /* a private directory: the config, the down file */
    char down_file[128]; /* created by relay_fixture_open */
    relay_state st;
} relay_fixture;

/* The memory driver's .so, from the test's first argument. */
void relay_fixture_driver(const char *memory_so);

/* Loads the config (relay settings: max_attempts 3, backoff 1000 ms x2 up to
 * 8000 ms, no jitter, batch_size 8, ordering by aggregate) and generation 0.
 * Fails the test on any error. */
relay_fixture *relay_fixture_open(void);
void relay_fixture_close(relay_fixture *f);

/* A message of aggregate Order/AGGREGATE_ID, payload {}, first attempt. */
obx_message fixture_message(const char *event_type, const char *aggregate_id, uint64_t token);

#endif
