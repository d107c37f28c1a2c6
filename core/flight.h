/* The batch in flight: one slot per message, filled by the worker and by
 * driver completions from any thread. */
#ifndef OBX_FLIGHT_H
#define OBX_FLIGHT_H

#include <pthread.h>

#include "outcome.h"
#include "outputs.h"

/* Where a message of the batch stands. */
typedef enum {
    SLOT_AWAITING, /* offered (or about to be): a completion is due */
    SLOT_DONE,     /* completed by the driver */
    SLOT_REFUSED,  /* refused at publish */
    SLOT_ABORTED,  /* still in flight at the shutdown deadline: released */
    SLOT_BAD,      /* the row could not become a message */
    SLOT_NOT_SENT  /* its output was paused or its instance down */
} slot_state;

typedef struct slot {
    slot_state state;
    obx_status status;
    int native_code;
    size_t output;
    char detail[OUTCOME_ERROR_MAX / 2]; /* valid UTF-8 (text_copy) */
} slot;

typedef struct flight {
    outputs *outs;     /* whose instances the messages went to */
    const char *scope; /* for the log */

    /*
     * lock guards slots, count, seq and awaiting: drivers complete from any
     * thread. The scratch arrays belong to the worker's thread.
     */
    pthread_mutex_t lock;
    pthread_cond_t done;
    slot *slots;
    int count;
    uint32_t seq; /* the batch number in each token: a late completion of an old batch is ignored */
    int awaiting;

    obx_message *scratch; /* one output's messages, contiguous for publish_batch */
    int *scratch_index;
    obx_status *accept;
} flight;

void flight_init(flight *f, int capacity, outputs *outs, const char *scope);
void flight_free(flight *f);

/* Starts a batch of count messages; returns the batch number for tokens. */
uint32_t flight_begin(flight *f, int count);

/* Settles a slot the worker decided itself (before it is offered). */
void flight_settle(slot *s, slot_state state, obx_status status, const char *detail);

/* Offers output `out` its AWAITING messages of msgs, in order, or settles
 * them as NOT_SENT when may_send is 0. Settles refusals. */
void flight_publish(flight *f, size_t out, const obx_message *msgs, int may_send);

/* How many completions are still due. */
int flight_left(flight *f);

/* Waits up to ms for a completion. */
void flight_wait(flight *f, int ms);

/* For each AWAITING slot, calls fn(arg, index) under the lock. */
void flight_each_awaiting(flight *f, void (*fn)(void *arg, int index), void *arg);

/* Closes every instance (completing what they owe as aborted); with release,
 * messages that were still in flight are released rather than failed. */
void flight_abort(flight *f, int release);

/* The host's callbacks (arg: the flight). */
void flight_on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail);
void flight_on_refuse(void *arg, uint64_t token, int native_code, const char *detail);

#endif
