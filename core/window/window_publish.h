/* WAL mode's publishing: the window's ready events become messages (the
 * same message and route code as poll mode), go to their outputs, and each
 * completion decides the event's fate with outcome_decide: finished
 * (acknowledged, or dead-lettered in the dead-letter table), retried in
 * place after its backoff, or deferred while its output is unavailable. */
#ifndef OBX_WINDOW_PUBLISH_H
#define OBX_WINDOW_PUBLISH_H

#include <pthread.h>

#include "base/arena.h"
#include "deliver/delivery.h"
#include "deliver/completions.h"
#include "event/message.h"
#include "host/relay_state.h"
#include "window/window.h"
#include "window/window_side.h"

/* How an event finished (window_event.ended). */
enum { WINDOW_ACKED = 1, WINDOW_DROPPED, WINDOW_LEFT_OUT, WINDOW_GIVEN_UP, WINDOW_DEAD_LETTERED };

/* A publisher without dead letters (replay): no side thread; an event
 * given up is finished as WINDOW_GIVEN_UP, the row untouched. */
typedef struct window_hooks {
    const char *scope; /* the outputs' (logs, metrics) */
    long only_output;  /* outputs.only: the one output made, or OUTPUTS_ROUTED */
    /* Once its message is built: the output it goes to, or -1: finished
     * unsent (WINDOW_LEFT_OUT). */
    long (*output_of)(void *arg, const window_event *ev);
    /* Each event as it finishes (its row still there), with the error when given up. */
    void (*ended)(void *arg, const window_event *ev, const char *error);
    void *arg;
} window_hooks;

typedef struct window_publisher {
    relay_state *st;
    window *w;
    /* NULL: the WAL's and cursor's (dead letters) */
    const window_hooks *hooks;
    delivery dl; /* publishes and settles; its outputs */
    arena scratch;
    message_source source;
    window_side side;  /* dead letters and the slot check, on its own thread and connection */
    unsigned epoch; /* the window's: bumped when it is cleared (a reconnect) */
    long in_flight;
    int paused; /* the last round found every output paused */

    completions done; /* completions from any thread, taken by the relay's thread */

    /* one round of sending (the relay's thread) */
    obx_message *msgs, *batch;
    obx_message_ext *exts, *batch_ext; /* parallel to msgs, batch */
    window_event **evs, **batch_evs;
    size_t *out_of;
    obx_status *accept;
    char (*refused)[DELIVERY_DETAIL_MAX];
    size_t round_cap;
    int *may_send; /* per output, decided once per round */
} window_publisher;

/* Creates the driver instances and starts the side thread with upkeep
 * (the source's own work on that thread, every 2 s, with upkeep_arg). Returns 0 or -1 (logged). */
int window_publisher_init(window_publisher *p, relay_state *st, window *w, side_upkeep upkeep,
                          void *upkeep_arg);
/* The same with hooks (kept by the caller), no side thread. */
int window_publisher_init_hooked(window_publisher *p, relay_state *st, window *w,
                                 const window_hooks *hooks);
void window_publisher_free(window_publisher *p);

/* Live reload: once nothing is in flight, takes the newest config
 * generation (routes and outputs); events not sent yet are routed by it,
 * none is sent twice because of it. Returns 1 while a new generation waits
 * for the events in flight (send nothing meanwhile). */
int window_publisher_reload(window_publisher *p);

/* Re-creates broken instances, probes paused outputs, serves drivers that poll. */
void window_publisher_tend(window_publisher *p);

/* Sends the events that may go now (at most round_cap). Returns how many;
 * sets paused when every output is paused (nothing sent, nothing built). */
int window_publisher_send(window_publisher *p, long long now);

/* Applies the completions that arrived. Returns how many. */
int window_publisher_settle(window_publisher *p, long long now);

/* Waits up to ms for a completion, serving drivers that poll. */
void window_publisher_wait(window_publisher *p, int ms);

/* Closes every instance: what they still hold comes back as aborted and is
 * retried without an attempt counted (on stop, or before a reconnect). */
void window_publisher_abort(window_publisher *p);

/* Before the window is dropped (a reconnect) or the relay exits: waits up
 * to ms for what is in flight and the dead letters being written, settling
 * without retrying; what is still in flight then is aborted (the source
 * reads it again: said in the log). */
void window_publisher_finish_in_flight(window_publisher *p, long long ms);

/* Dead letters submitted and not yet finished. */
long window_publisher_burying(window_publisher *p);

/* The window was cleared (a reconnect): dead letters written from now on
 * for its old events finish nothing. */
void window_publisher_new_epoch(window_publisher *p);

#endif
