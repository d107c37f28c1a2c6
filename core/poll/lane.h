/* A lane: one batch's life on its own session, from the claim that opens
 * the transaction holding its rows to the record that commits it. A worker
 * has two, so it can claim and publish a batch while the other waits for
 * acknowledgements (worker.c). */
#ifndef OBX_LANE_H
#define OBX_LANE_H

#include "base/arena.h"
#include "deliver/flight.h"
#include "event/message.h"
#include "event/outcome.h"
#include "host/relay_state.h"
#include "poll/batch.h"
#include "poll/claimer.h"
#include "poll/session.h"

/* What a worker's lanes share: its config generation, driver instances,
 * where its ordered walk stands. Belongs to the worker's thread. */
typedef struct lane_shared {
    relay_state *st;
    const relay_config *cfg; /* the worker's generation's */
    delivery *dl;            /* publishes and settles; its outputs are the worker's */
    int run_length;          /* events of one aggregate per claim: 1 unless all keep order */
    claimer claimer;         /* where the next ordered claim, on either lane, walks from */
    const char *scope;       /* "worker N" */
} lane_shared;

typedef struct lane {
    lane_shared *sh;
    session db;
    int busy; /* a batch is claimed and not yet recorded */
    batch b;
    long long claimed_at, renewed_at;
    flight *flight; /* one of the worker's flights */
    obx_message *msgs;
    obx_message_ext *exts; /* parallel to msgs: host->message_ext */
    int *published, *after_failure;
    decision *decisions;
    settle_item *settle;
    arena arena;
    message_source source; /* how rows become messages, into arena */
} lane;

void lane_init(lane *l, lane_shared *sh, flight *f, const char *payload_type);
void lane_free(lane *l);

/* After a live reload: the new generation's config. */
void lane_use_config(lane *l, const relay_config *cfg);

/* Opens the lane's transaction, claims a batch and offers it to the
 * outputs. Returns the rows claimed (the lane is busy when > 0), 0 when
 * none (the transaction is ended), -1 after a failure. */
int lane_start(lane *l);

/* Keeps a busy lane's transaction from idling past the lease (the lease is
 * the transaction: session.c); does nothing when not due or while the
 * session runs a statement. */
void lane_renew(lane *l);

/* Once the batch has no completion due (or was aborted): decides every
 * message's outcome, records them and commits; the lane is free again. */
void lane_finish(lane *l);

/* Steps of lane_start and lane_finish that need no database (the unit tests
 * call them). A run's events behind a row that cannot be a message are not
 * offered: their slots are aborted, so they go back unattempted to wait for
 * it. Each message of the batch is decided from its slot, into l->decisions. */
void lane_hold_behind_bad_rows(lane *l);
void lane_decide(lane *l);

#endif
