/* Each output's health, shared by the workers: up, or paused because it
 * said OBX_UNAVAILABLE. A paused output gets no messages; one worker at a
 * time probes it, with backoff, and the first success resumes it. Down and
 * back are logged once per outage, not per worker or message: an outage
 * ends with an acknowledged message, so a probe that passes and a send that
 * fails again stay one outage. */
#ifndef OBX_HEALTH_H
#define OBX_HEALTH_H

#include <pthread.h>

typedef struct output_health {
    const char *name;
    pthread_mutex_t lock; /* guards every field below */
    int down;
    long long down_since_ms; /* the outage's first failure (0: none open), monotonic */
    long long up_at_ms;      /* when it was resumed in the open outage (0: not yet) */
    long long probe_at_ms;   /* monotonic */
    int backoff_ms;          /* the next pause */
    long long outages;       /* how many times it went down */
} output_health;

void health_init(output_health *h, const char *name);
void health_destroy(output_health *h);

/* The output said UNAVAILABLE (reason for the log): pause it. Returns how
 * long messages deferred now should wait. */
long long health_down(output_health *h, const char *reason);

/* The output passed a probe (acked = 0): resumed; or acknowledged a message
 * (acked = 1): resumed, and an open outage ends, logged with how long it
 * was down (from its first failure to when it was resumed). */
void health_up(output_health *h, int acked);

int health_is_down(output_health *h);

/* While down: 1 when it is this caller's turn to probe (the next turn is
 * moved a backoff later, so workers do not probe at once), else 0. */
int health_take_probe(output_health *h);

/* While down: milliseconds until the next probe (0 when up or due). */
long long health_wait_ms(output_health *h);

/* For metrics: 1 up, 0 down; outages so far. */
void health_read(output_health *h, int *up, long long *outages);

#endif
