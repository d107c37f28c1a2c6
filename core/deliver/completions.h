/* The delivery core's second intake shape: completions from any thread kept
 * in a queue that its one owning thread swaps out and applies (the
 * window's publisher, replay). Poll's lanes fill their batch's slots
 * instead (flight.c). */
#ifndef OBX_COMPLETIONS_H
#define OBX_COMPLETIONS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "deliver/delivery.h"

/* One completion, decoded: the message's key and which offer it answers. */
typedef struct completion {
    uint64_t key;
    uint32_t check;
    obx_status status;
    int native_code;
    char detail[DELIVERY_DETAIL_MAX];
} completion;

typedef struct completions {
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    completion *items, *taken;
    size_t len, cap, taken_cap;
} completions;

void completions_init(completions *in);
void completions_free(completions *in);
/* The delivery core's intake (delivery_intake_fn; arg is the queue). */
void completions_put(void *arg, uint64_t key, uint32_t check, obx_status status, int native_code,
               const char *detail);
/* What arrived since the last take, for the owner until its next take;
 * *count set. */
const completion *completions_take(completions *in, size_t *count);
/* Waits up to ms while nothing has arrived. */
void completions_wait(completions *in, int ms);

#endif
