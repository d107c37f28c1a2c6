/* The batches in flight: one per lane of a worker, one slot per message,
 * filled by the worker and by driver completions from any thread. A
 * message's token names its lane, its batch and its slot. */
#ifndef OBX_FLIGHT_H
#define OBX_FLIGHT_H

#include <pthread.h>

#include "deliver/delivery.h"

/* Batches a worker may have in flight at once (each on its own session). */
#define FLIGHT_LANES 2

/* Where a message of the batch stands. */
typedef enum {
    SLOT_AWAITING, /* offered (or about to be): a completion is due */
    SLOT_DONE,     /* completed by the driver */
    SLOT_REFUSED,  /* refused at publish */
    SLOT_ABORTED,  /* still in flight at the shutdown deadline: released */
    SLOT_BAD,      /* the row could not become a message */
    SLOT_NOT_SENT, /* its output was paused or its instance down */
    SLOT_DROPPED   /* a drop route matched it: never offered */
} slot_state;

typedef struct slot {
    slot_state state;
    obx_status status;
    int native_code;
    size_t output;
    const cfg_route *route;           /* the route it took; NULL for a bad row */
    int offered;                      /* handed to publish_batch */
    char detail[DELIVERY_DETAIL_MAX]; /* valid UTF-8 (text_copy) */
} slot;

typedef struct flights flights;

/* One lane's batch. Its slots, count, seq, awaiting and active are guarded
 * by the shared lock of its flights; the scratch arrays belong to the
 * worker's thread. */
typedef struct flight {
    flights *set;
    unsigned lane; /* its bit in the tokens */
    slot *slots;
    int count;
    uint32_t seq; /* the batch number in each token: a late completion of an old batch is ignored */
    int awaiting;
    int offered; /* messages handed to a driver */
    int active;  /* between flight_begin and flight_end */

    obx_message *scratch; /* one output's messages, contiguous for publish_batch */
    obx_message_ext *scratch_ext;
    int *scratch_index;
    obx_status *accept;
    char (*refusal)[DELIVERY_DETAIL_MAX];
} flight;

/* A worker's lanes' batches: the delivery core's intake, which routes each
 * completion to its lane and slot by the token's key. */
struct flights {
    delivery *dl;      /* publishes for the lanes; its outputs are shared by them */
    const char *scope; /* for the log */
    pthread_mutex_t lock;
    pthread_cond_t done; /* a lane's first or last completion, or a FATAL one */
    atomic_long late;    /* given-back messages whose completion may still come */
    flight lane[FLIGHT_LANES];
};

void flights_init(flights *fs, int capacity, delivery *dl, const char *scope);
void flights_free(flights *fs);

/* Starts a batch of count messages on f. */
void flight_begin(flight *f, int count);
/* The batch is recorded: f no longer counts as in flight. */
void flight_end(flight *f);

/* The token of message index of f's current batch. */
uint64_t flight_token(const flight *f, int index);

/* What a settled slot says, for the delivery core's settle. */
verdict flight_verdict(const slot *s);

/* Is the slot's message done: acknowledged, or dropped by its route? */
static inline int slot_succeeded(const slot *s)
{
    return (s->state == SLOT_DONE && s->status == OBX_OK) || s->state == SLOT_DROPPED;
}

/* Settles a slot the worker decided itself (before it is offered). */
void flight_settle(slot *s, slot_state state, obx_status status, const char *detail);

/* Offers output `out` its AWAITING messages of msgs (ext: their host->message_ext,
 * parallel, or NULL), in order, or settles
 * them as NOT_SENT when may_send is 0. Settles refusals. */
void flight_publish(flight *f, size_t out, const obx_message *msgs, const obx_message_ext *ext,
                    int may_send);

/* How many completions of f are still due. */
int flight_left(flight *f);

/* Has a driver answered (completed or refused) any message of f yet? */
int flight_answered(flight *f);

/* Waits up to ms, or until an active lane has no completion left due (or,
 * woken by it, its first completion). */
void flights_wait(flights *fs, int ms);

/* Gives back f's messages still awaiting a completion: each settles as its
 * output's outage (UNAVAILABLE: no attempt counted, the output paused) with
 * reason, and its output's instance is stalled (outputs_stall). A late
 * completion of one is then ignored quietly. Returns how many. */
int flight_give_back(flight *f, const char *reason);

/* Closes every instance (completing what they owe, for every lane, as
 * aborted); with release, messages that were still in flight are released
 * rather than failed. */
void flights_abort(flights *fs, int release);

/* The delivery core's intake (arg: the flights): a completion, from any
 * thread, for the slot its key names, when its check is the batch's. */
void flight_on_complete(void *arg, uint64_t key, uint32_t check, obx_status status, int native_code,
                        const char *detail);

#endif
