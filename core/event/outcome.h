/* The decision for one message of a batch: published, retried, dead,
 * released or deferred, and after how long. A pure function, so the retry
 * policy is tested without a database or a driver. */
#ifndef OBX_OUTCOME_H
#define OBX_OUTCOME_H

#include "obx/driver.h"

/* What the record statement does with a row. The numbers are written into
 * the SQL text through OUTCOME_SQL, so C and SQL share one definition. */
#define OUTCOME_PUBLISHED 0 /* acknowledged: marked published (or deleted) */
#define OUTCOME_RETRY 1     /* failed: one attempt more, available after a backoff */
#define OUTCOME_DEAD 2      /* dead-lettered: one attempt more, last_error kept */
#define OUTCOME_RELEASE 3   /* no verdict of its own: lease cleared, no attempt */
#define OUTCOME_DEFER 4     /* the output, not the message, failed: no attempt, wait */
#define OUTCOME_COUNT 5
#define OUTCOME_STR_(x) #x
#define OUTCOME_SQL(x) OUTCOME_STR_(x) /* OUTCOME_SQL(OUTCOME_DEAD) is "2" */

/* How a message of the batch ended, as the worker saw it. */
typedef enum verdict_kind {
    VERDICT_COMPLETED, /* the driver completed it: see status */
    VERDICT_REFUSED,   /* the driver refused it at publish: see status */
    VERDICT_BAD_ROW,   /* it could not become a message (no route, bad headers...) */
    VERDICT_ABORTED,   /* still in flight at the shutdown deadline */
    VERDICT_NOT_SENT,  /* its output was paused or its instance down: never offered */
    VERDICT_DROPPED,   /* a drop route matched it: done, never offered */
} verdict_kind;

typedef struct verdict {
    verdict_kind kind;
    obx_status status; /* COMPLETED and REFUSED; any value a driver gave */
    int native_code;
    const char *detail; /* the driver's text or the reason; may be empty */
} verdict;

typedef struct retry_policy {
    int max_attempts;
    int initial_ms, max_ms;
    double multiplier, jitter;
} retry_policy;

#define OUTCOME_ERROR_MAX 512

typedef struct decision {
    int outcome;                   /* OUTCOME_* */
    long long delay_ms;            /* RETRY and DEFER: wait this long */
    char error[OUTCOME_ERROR_MAX]; /* RETRY, DEAD, DEFER: valid UTF-8 */
} decision;

/*
 * Decides one message. attempt counts from 1 (this attempt). after_failure:
 * an earlier event of the same aggregate in this batch was not published,
 * so this one must not be marked ahead of it. pause_ms: how long a paused
 * output waits before its next probe. random01 in [0, 1) draws the jitter.
 */
void outcome_decide(const retry_policy *p, const verdict *v, unsigned attempt, int after_failure,
                    long long pause_ms, double random01, decision *out);

/* Attempt n's backoff: min(initial * multiplier^(n-1), max), less up to
 * jitter of it. */
long long outcome_backoff_ms(const retry_policy *p, unsigned attempt, double random01);

#endif
