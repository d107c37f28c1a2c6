/* One worker's driver instances, one per output of its config generation:
 * created at start, re-created with backoff after FATAL, probed while their
 * output is paused, and carried over or replaced when the worker switches to
 * a new generation (live reload). */
#ifndef OBX_OUTPUTS_H
#define OBX_OUTPUTS_H

#include <stdatomic.h>

#include "host/host.h"
#include "host/relay_state.h"

typedef struct output_instance {
    host_ctx *host;   /* on the heap: the driver keeps its address, the array may move */
    config_gen *born; /* the generation host points into; held while the instance lives */
    obx_instance *inst;
    atomic_int broken;  /* FATAL seen (any thread): close now, re-create before the next claim */
    long long retry_at; /* when to try create again */
    int backoff_ms;
    int failed;                 /* closed after a failure: the next create is a re-creation */
    long long stalled_since_ms; /* batches given back while it held them (0: not stalled) */
} output_instance;

typedef struct outputs {
    relay_state *st;
    config_gen *gen;      /* the worker's generation (held): its outputs, drivers, health */
    output_instance *out; /* gen->cfg->output_count of them */
    size_t count;
    char scope[32]; /* "worker N", for the log */
    long only;      /* OUTPUTS_ROUTED, OUTPUTS_DEAD_LETTER, or the index of the one output used */
    host_complete_fn on_complete;
    host_refuse_fn on_refuse;
    void *arg; /* for both callbacks */
} outputs;

/* outputs.only: the outputs a route names (the workers'), or those a
 * dead_letter group names (the dead-letter thread's) */
#define OUTPUTS_ROUTED (-1)
#define OUTPUTS_DEAD_LETTER (-2)

void outputs_init(outputs *o, relay_state *st, int worker_index, host_complete_fn on_complete,
                  host_refuse_fn on_refuse, void *arg);
void outputs_free(outputs *o);

/* Between batches (nothing in flight): when the engine published a new
 * config generation, takes it; instances of outputs it keeps unchanged carry
 * over, the others are closed (new ones are made by outputs_ensure).
 * Returns 1 when o->gen changed. */
int outputs_switch(outputs *o);

/* Output i's health, shared by the workers on the same generation. */
output_health *outputs_health(outputs *o, size_t i);

/* Creates missing instances when due (first: at start, where a failure is
 * fatal for the relay). Returns 0 when all are up, 1 when some are not yet,
 * -1 when a first create failed. */
int outputs_ensure(outputs *o, int first);

/* Probes paused outputs whose turn has come (with the driver's probe, where
 * it has one). Returns 1 when at least one output can take messages. */
int outputs_any_usable(outputs *o);

/* May messages be sent to output i now? Paused outputs without a probe
 * callback are probed by the batch itself, one worker at a time. */
int outputs_may_send(outputs *o, size_t i);

/* Closes (completing its in-flight messages as aborted) and frees one. */
void outputs_close(outputs *o, size_t i);
void outputs_close_all(outputs *o);

/* Output i's instance held messages past relay.max_transaction_ms: their
 * batch was given back. It gets no more until it has completed (or refused)
 * everything it holds, so a reconnect or a broker that wakes up sends each
 * given-back message at most once more; after 5 leases it is re-created. */
void outputs_stall(outputs *o, size_t i);

/* Closes instances marked broken; they owe completions only close gives. */
void outputs_close_broken(outputs *o);

/* Serves drivers that poll, each for its share of timeout_ms. Returns 0 when
 * none polls (the caller waits on its own). */
int outputs_poll(outputs *o, int timeout_ms);

/* A driver that acknowledged something is healthy again. */
void outputs_succeeded(outputs *o, size_t i);

/* The milliseconds until a paused output's next probe, or 0 (an output an
 * operator paused: a second, so that a resume is seen soon). */
long long outputs_wait_ms(outputs *o);

/* How long output i's messages not sent now should wait. */
long long outputs_pause_ms(outputs *o, size_t i);

#endif
