/* One outbox a process relays (a source of a config's `sources`, or its
 * only one): its state, drivers and threads, started, ended and freed by
 * the engine's thread (engine.c). */
#ifndef OBX_OUTBOX_RUN_H
#define OBX_OUTBOX_RUN_H

#include <pthread.h>
#include <stdatomic.h>

#include "config/config.h"
#include "host/relay_state.h"
#include "host/source.h"

/* One outbox relayed by this process: a source of `sources`, or the file's
 * only one. Each has its own state, drivers, threads and database sessions,
 * so one that fails or waits delays no other. */
typedef struct outbox_run {
    relay_state *st; /* st->cfg is the run's, freed with it */
    const source_kind *src;
    void *run;             /* the source's threads; NULL: not started */
    char payload_type[64]; /* the payload column's type: the source keeps a pointer to it */
    pthread_t poller, forwarder;
    int forwarding;
    int ended;
    int drain_later;       /* --drain, a fan-out target: drains once its source has ended */
    long long retry_at_ms; /* not started: when to check its database again */
    pthread_t starter;     /* run_start_async's thread */
    int starting;          /* the starter runs (the engine's thread's flag) */
    atomic_int start_rc;   /* the starter's result: 0 not yet, 1 started, -1 failed */
} outbox_run;

/* A run of cfg (taken), its drivers loaded; NULL (logged, cfg freed) when
 * they cannot be. */
outbox_run *run_new(relay_config *cfg, int drain);
/* Checks r's database and starts its threads: 0, or -1 (logged). */
int run_start(outbox_run *r);
/* run_start on a thread of its own, so a database that does not answer
 * delays no other source; run_start_poll: 0 while it runs (or none does),
 * then once its result, 1 (started) or -1 (logged), the thread joined. */
void run_start_async(outbox_run *r);
int run_start_poll(outbox_run *r);
/* r's threads have ended: its helpers stop too, and its totals are logged. */
void run_end(outbox_run *r);
void run_free(outbox_run *r);
/* The calling thread's log lines name r's source from now (NULL: none). */
void speak_for(const outbox_run *r);

#endif
