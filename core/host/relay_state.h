/* What the engine's threads share: the config, the current config
 * generation (its drivers and each output's health), the stop request and
 * the totals. Workers, the metrics endpoint and the engine read it; only the
 * engine creates it and publishes new generations. */
#ifndef OBX_RELAY_STATE_H
#define OBX_RELAY_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "config/config.h"
#include "db/lock_holder.h"
#include "event/message.h"
#include "host/generation.h"
#include "host/pauses.h"

/* Totals for the exit summary and the metrics endpoint. */
typedef struct relay_stats {
    atomic_llong claimed, published, retried, dead, released, deferred;
    atomic_llong dead_forwarded; /* dead events the dead_letter output acknowledged */
} relay_stats;

typedef struct relay_state {
    const relay_config *cfg;  /* as started: the settings that cannot change live */
    pthread_mutex_t gen_lock; /* guards gen against a reload while a user takes it */
    config_gen *gen;          /* the current generation; holds one of its users */
    atomic_long gen_number;   /* gen->number, to notice a new one without the lock */
    payload_kind payload;
    atomic_int
        drain; /* exit once nothing is pending (a fan-out target: set once its source ends) */

    atomic_int stop;         /* 1: stop claiming and finish; set by signals */
    atomic_int failed;       /* ended for good (state_fail): exit non-zero */
    _Atomic(char *) fatal;   /* why it failed, set once: /readyz and the engine's log say it */
    atomic_int running;      /* its threads run (set by run/): outbox_relay_source_up */
    atomic_llong stop_at_ms; /* when stop was requested (monotonic) */
    relay_stats stats;
    atomic_llong claim_place; /* claimer.c: the furthest row the workers' unordered claims took */
    struct relay_metrics *metrics; /* telemetry/counters.h: per output, latencies, heartbeats; may be NULL */
    pauses pauses;                 /* what an operator paused, read by the backlog poller */
    const struct source_kind *src;  /* the source's table, set once by run/ (source.h) */

    void *gauges; /* the source's own series (source_kind.gauges_size; its metrics renders them) */
    lock_squats squats; /* the relay's advisory locks held by a role that is not the relay's */
} relay_state;

/* Requests a graceful stop (async-signal-safe). */
static inline void state_request_stop(relay_state *st, long long now)
{
    if (atomic_exchange(&st->stop, 1) == 0)
        atomic_store(&st->stop_at_ms, now);
}

/* The source cannot go on (its slot is gone, its threads could not start):
 * why (one line, no secret: /readyz shows it) is kept, the first one only,
 * before failed is set, so whoever sees failed can read it. */
static inline void state_fail(relay_state *st, const char *why)
{
    char *mine = strdup(why);
    if (mine) /* libpq's messages end in a newline */
        mine[strcspn(mine, "\n")] = '\0';
    char *none = NULL;
    if (!mine || !atomic_compare_exchange_strong(&st->fatal, &none, mine))
        free(mine);
    atomic_store(&st->failed, 1);
}

/* The current generation, with one more user the caller must release. */
static inline config_gen *state_take_gen(relay_state *st)
{
    pthread_mutex_lock(&st->gen_lock);
    config_gen *g = st->gen;
    gen_hold(g);
    pthread_mutex_unlock(&st->gen_lock);
    return g;
}

#endif
