/* The delivery core: what every source (poll, WAL) does with its messages
 * once built. One module publishes a set of messages to an output (the only
 * call of a driver's publish_batch), takes the drivers' completions (one
 * token codec, routed to the source's intake), and settles each message:
 * the output's health, the outcome decision under the retry policy of the
 * config generation, the per-output and per-route counters. What a settled
 * outcome does to the event (a row marked, a window slot finished, a dead
 * letter written) is the source's. */
#ifndef OBX_DELIVERY_H
#define OBX_DELIVERY_H

#include <stdint.h>

#include "event/outcome.h"
#include "host/outputs.h"
#include "telemetry/tracing.h"

#define DELIVERY_DETAIL_MAX (OUTCOME_ERROR_MAX / 2)

/* A token names a message (key, 40 bits, the source's: a lane and slot, an
 * event's place in the window) and which offer of it (check, 24 bits): a
 * completion whose check is not the current offer's is stale. */
#define DELIVERY_KEY_BITS 40
#define DELIVERY_CHECK_MASK 0xffffffu

static inline uint64_t delivery_token(uint64_t key, uint32_t check)
{
    return (uint64_t)(check & DELIVERY_CHECK_MASK) << DELIVERY_KEY_BITS |
           (key & ((UINT64_C(1) << DELIVERY_KEY_BITS) - 1));
}

static inline uint64_t delivery_token_key(uint64_t token)
{
    return token & ((UINT64_C(1) << DELIVERY_KEY_BITS) - 1);
}

static inline uint32_t delivery_token_check(uint64_t token)
{
    return (uint32_t)(token >> DELIVERY_KEY_BITS);
}

/* The source's side of the intake: a completion, decoded, from any thread. */
typedef void (*delivery_intake_fn)(void *arg, uint64_t key, uint32_t check, obx_status status,
                                   int native_code, const char *detail);

typedef struct delivery {
    relay_state *st;
    outputs outs; /* one driver instance per output of the generation */
    const relay_config *cfg;
    retry_policy policy; /* built from cfg, once per generation */
    unsigned rand_state; /* the jitter */
    delivery_intake_fn intake;
    void *intake_arg;
    /* the publish call running (on the owner's thread), where refusals land */
    const obx_message *publishing;
    size_t publishing_count;
    char (*refusal)[DELIVERY_DETAIL_MAX];
    tracing_open *spans; /* NULL: tracing is off */
} delivery;

/* Makes the driver instances' host callbacks point at d; completions go to
 * intake(intake_arg, ...). worker_index names the instances in the log. */
void delivery_init(delivery *d, relay_state *st, int worker_index, delivery_intake_fn intake,
                   void *intake_arg);
void delivery_free(delivery *d);

/* Between batches: takes the newest config generation (outputs_switch) and
 * rebuilds the policy from it. Returns 1 when the generation changed. */
int delivery_switch(delivery *d);

/* Offers output out the count messages (tokens set), in order, with ext[k]
 * (or NULL) as message k's host->message_ext. accept[k]:
 * OBX_OK, or the refusal's status (OBX_FATAL when the instance failed: it
 * is then marked broken); refusal[k]: the driver's reason, or a default.
 * Completions may arrive before it returns, from any thread. Returns how
 * many were accepted. */
size_t delivery_publish(delivery *d, size_t out, const obx_message *msgs,
                        const obx_message_ext *ext, size_t count, obx_status *accept,
                        char (*refusal)[DELIVERY_DETAIL_MAX]);

/* One message to settle. */
typedef struct settle_item {
    size_t output;
    verdict v;
    unsigned attempt;        /* this attempt, from 1 */
    int after_failure;       /* an earlier event of its aggregate was not published */
    const cfg_route *route;  /* the route it took; NULL when it never became a message */
    int offered;             /* it was handed to publish (counted in flight) */
    long long created_at_us; /* for the commit-to-acknowledgement histogram */
    long long since_ms;      /* when it was handed over (monotonic): the publish time */
} settle_item;

/* Settles count messages: each output's health learns what its messages
 * said (all of them first, so a deferred message waits for the pause its
 * batch caused), then each gets its decision and is counted. */
void delivery_settle(delivery *d, const settle_item *items, size_t count, decision *out);

#endif
