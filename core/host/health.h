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
    int proved;              /* an acknowledgement came: ok_sent_ms is set */
    long long ok_sent_ms;    /* the latest send an acknowledgement proved working */
    int refusals;            /* refused for good since then, none proved its own */
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

/* The circuit breaker: an output that refuses everything (a webhook's 404
 * after a bad deploy, a rotated signing key) is an outage, not a backlog of
 * dead events. A message sent at sent_ms was acknowledged: the output worked
 * for what was sent until then. */
void health_proved(output_health *h, long long sent_ms);

typedef enum {
    REFUSAL_OWN,     /* something sent as late was acknowledged, or the message was refused
                        on its HEALTH_SUSPECT_TRIES-th attempt while the output was up */
    REFUSAL_SUSPECT, /* nothing proves the output works: retried, an attempt counted */
    REFUSAL_OUTAGE   /* the HEALTH_REFUSALS-th in a row, or the output is paused (an output
                        without a probe is probed by its next batch): paused, none counted */
} refusal_kind;
#define HEALTH_REFUSALS 5
#define HEALTH_SUSPECT_TRIES 3

/* A message sent at sent_ms, on its attempt-th attempt, was refused for
 * good (PERMANENT, reason for the log): whose fault it is. */
refusal_kind health_refused(output_health *h, long long sent_ms, unsigned attempt,
                            const char *reason);

/* While down: 1 when it is this caller's turn to probe (the next turn is
 * moved a backoff later, so workers do not probe at once), else 0. */
int health_take_probe(output_health *h);

/* While down: milliseconds until the next probe (0 when up or due). */
long long health_wait_ms(output_health *h);

/* For metrics: 1 up, 0 down; outages so far. */
void health_read(output_health *h, int *up, long long *outages);

#endif
