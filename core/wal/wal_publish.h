/* WAL mode's publishing: the window's ready events become messages (the
 * same message and route code as poll mode), go to their outputs, and each
 * completion decides the event's fate with outcome_decide: finished
 * (acknowledged, or dead-lettered in the dead-letter table), retried in
 * place after its backoff, or deferred while its output is unavailable. */
#ifndef OBX_WAL_PUBLISH_H
#define OBX_WAL_PUBLISH_H

#include <pthread.h>

#include "arena.h"
#include "message.h"
#include "delivery.h"
#include "relay_state.h"
#include "wal_side.h"
#include "wal_window.h"

typedef struct wal_done {
    uint64_t seq;   /* the event's */
    uint32_t check; /* which send it answers */
    obx_status status;
    int native_code;
    char detail[DELIVERY_DETAIL_MAX];
} wal_done;

typedef struct wal_publisher {
    relay_state *st;
    wal_window *w;
    delivery dl; /* publishes and settles; its outputs */
    arena scratch;
    message_source source;
    wal_side side;  /* dead letters and the slot check, on its own thread and connection */
    unsigned epoch; /* the window's: bumped when it is cleared (a reconnect) */
    long in_flight;
    int paused; /* the last round found every output paused */

    /* completions from any thread, taken by the relay's thread */
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    wal_done *inbox, *taken;
    size_t inbox_len, inbox_cap, taken_cap;

    /* one round of sending (the relay's thread) */
    obx_message *msgs, *batch;
    obx_message_ext *exts, *batch_ext; /* parallel to msgs, batch */
    wal_event **evs, **batch_evs;
    size_t *out_of;
    obx_status *accept;
    char (*refused)[DELIVERY_DETAIL_MAX];
    size_t round_cap;
    int *may_send; /* per output, decided once per round */
} wal_publisher;

/* Creates the driver instances and starts the side thread with upkeep
 * (NULL: the slot check). Returns 0 or -1 (logged). */
int wal_publisher_init(wal_publisher *p, relay_state *st, wal_window *w, side_upkeep upkeep);
void wal_publisher_free(wal_publisher *p);

/* Live reload: once nothing is in flight, takes the newest config
 * generation (routes and outputs); events not sent yet are routed by it,
 * none is sent twice because of it. Returns 1 while a new generation waits
 * for the events in flight (send nothing meanwhile). */
int wal_publisher_reload(wal_publisher *p);

/* Re-creates broken instances, probes paused outputs, serves drivers that poll. */
void wal_publisher_tend(wal_publisher *p);

/* Sends the events that may go now (at most round_cap). Returns how many;
 * sets paused when every output is paused (nothing sent, nothing built). */
int wal_publisher_send(wal_publisher *p, long long now);

/* Applies the completions that arrived. Returns how many. */
int wal_publisher_settle(wal_publisher *p, long long now);

/* Waits up to ms for a completion, serving drivers that poll. */
void wal_publisher_wait(wal_publisher *p, int ms);

/* Closes every instance: what they still hold comes back as aborted and is
 * retried without an attempt counted (on stop, or before a reconnect). */
void wal_publisher_abort(wal_publisher *p);

/* Before the window is dropped (a reconnect) or the relay exits: waits up
 * to ms for what is in flight and the dead letters being written, settling
 * without retrying; what is still in flight then is aborted (the source
 * reads it again: said in the log). */
void wal_publisher_finish_in_flight(wal_publisher *p, long long ms);

/* Dead letters submitted and not yet finished. */
long wal_publisher_burying(wal_publisher *p);

/* The window was cleared (a reconnect): dead letters written from now on
 * for its old events finish nothing. */
void wal_publisher_new_epoch(wal_publisher *p);

#endif
