/*
 * The token ledger: what a driver instance did with the tokens it was
 * given, checked against the completion contract of include/obx/driver.h.
 * One place for the rules, used by check-driver (conformance_host.c) and by
 * the driver harnesses' fake host (tests/common/fake_host.c):
 *   - exactly one completion per accepted token, none for a refused one,
 *     none for a token never given, none after close returns;
 *   - statuses (completions and accept[]) are obx_status values;
 *   - refuse only from inside publish_batch, on its thread, at most once,
 *     for a message of the running batch that publish_batch then refuses.
 *
 * A token is (tag << 32) | slot index: a completion with another tag belongs
 * to another instance. Completions come from any thread: everything is
 * guarded by lock.
 */
#ifndef OBX_LEDGER_H
#define OBX_LEDGER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "obx/driver.h"

#define REC_STATUSES (OBX_STATUS_MAX + 1)

typedef struct rec_slot {
    uint8_t published;    /* given to publish_batch (this offer) */
    uint8_t accept_known; /* publish_batch returned: accept is its verdict */
    uint8_t completions;  /* of this offer, saturating */
    uint8_t refusals;     /* host->refuse calls for this offer */
    uint8_t accept;
    uint8_t status; /* of the last completion */
} rec_slot;

typedef struct ledger {
    pthread_mutex_t lock;
    uint32_t tag; /* high half of every token of this instance */
    rec_slot *slots;
    size_t cap;  /* slots */
    size_t used; /* slots handed out so far, for callers that number tokens in order */
    int in_close, closed;
    int in_publish;      /* publish_batch is running, on publisher */
    pthread_t publisher; /* valid while in_publish */
    size_t completions, during_close[REC_STATUSES], status_count[REC_STATUSES];
    /* violations since ledger_violations last reset them */
    size_t dup, unknown, foreign, after_close, refused_completed, bad_status;
    size_t bad_refuse;       /* refuse outside publish_batch, twice, or for an accepted token */
    size_t refused, reasons; /* refusals at publish, and how many of them gave a reason */
    char problem[320];       /* the first violation, in words */
} ledger;

/* A ledger of cap slots (owned by the caller, zeroed) for tokens tagged tag. */
void ledger_init(ledger *rec, uint32_t tag, rec_slot *slots, size_t cap);

/* Notes the first violation since the last take, in words. Caller holds lock. */
void ledger_problem(ledger *rec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Around publish_batch, on the publishing thread. begin offers the tokens
 * (again, for one offered before); end records accept[] (the verdict
 * whatever publish_batch returned: it writes every entry) and checks the
 * refusals made meanwhile. end returns how many were accepted. */
void ledger_publish_begin(ledger *rec, const obx_message *msgs, size_t count);
size_t ledger_publish_end(ledger *rec, const obx_message *msgs, size_t count,
                          const obx_status *accept);

/* A completion or a refusal as the driver made it. complete returns the
 * token's slot, or -1 when the token is not one of this ledger's. */
long ledger_complete(ledger *rec, uint64_t token, obx_status status, const char *detail);
void ledger_refuse(ledger *rec, uint64_t token, const char *detail);

/* close is running / has returned: completions are counted as during close,
 * then any further one is a violation. */
void ledger_closing(ledger *rec);
void ledger_closed(ledger *rec);

/* Offered, not refused, not completed yet (in publish or accepted). */
size_t ledger_pending(ledger *rec);
/* Completions for tokens never given to this instance, or another's. */
int ledger_misrouted(ledger *rec);

/* Violations so far; a summary and the rule broken first in why, and the
 * counters cleared when reset is set. Returns how many. */
size_t ledger_violations(ledger *rec, char *why, size_t why_size, int reset);

#endif
