/*
 * check-driver internals: one run of the conformance checks, the recording
 * host (conformance_host.c, on the shared token ledger of ledger.h), the messages it sends
 * (conformance_messages.c), and the checks (conformance_checks.c, conformance_lifecycle.c).
 */
#ifndef OBX_CONFORMANCE_RUN_H
#define OBX_CONFORMANCE_RUN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "conformance/ledger.h"
#include "host/host.h"
#include "host/loader.h"

#define CF_CAPACITY 4096 /* tokens per ledger */
#define CF_MAX_THREADS 32
#define CF_MANY 1000
#define CF_PUBLISH_BOUND_MS 5000 /* a publish_batch of CF_MANY slower than this blocks */
#define CF_AFTER_CLOSE_MS 300    /* how long to watch for completions after close */
#define CF_SLACK_MS 5000         /* what a call given a timeout may overrun it by */

/* What one instance did with its tokens, checked by the shared ledger
 * (ledger.h); check-driver numbers tokens in order from used. */
typedef rec_slot cf_slot;
typedef ledger cf_recorder;

typedef struct cf_instance {
    host_ctx host;
    cf_recorder rec;
    cf_slot slots[CF_CAPACITY]; /* rec's, freed with the instance */
    obx_instance *inst;
} cf_instance;

typedef struct cf_run {
    const loaded_driver *drv;
    const obx_driver_def *def;
    relay_config *cfg;
    const cfg_output *output;
    const char *destination;
    int timeout_ms;
    unsigned rand_state;
    int failed;
    /* threads that delivered completions, across all checks */
    pthread_mutex_t threads_lock;
    pthread_t threads[CF_MAX_THREADS];
    size_t thread_count;
    pthread_t host_threads[2];
    size_t host_thread_count;
    size_t off_host_completions, total_completions;
    size_t refused, reasons; /* over every instance of the run */
} cf_run;

extern cf_run *cf_current; /* for the completion callback's thread bookkeeping */

int64_t cf_now_ms(void);
void cf_sleep_ms(int ms);

/* Prints "VERDICT name: why"; a FAIL marks the run failed. */
void cf_result(cf_run *run, const char *verdict, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define cf_pass(run, name, ...) cf_result(run, "PASS", name, __VA_ARGS__)
#define cf_fail(run, name, ...) cf_result(run, "FAIL", name, __VA_ARGS__)
#define cf_skip(run, name, ...) cf_result(run, "SKIP", name, __VA_ARGS__)

/* ---- the recording host (conformance_host.c) ---- */

/* Notes the first violation rec saw, in words (rec->lock held). */
#define cf_problem ledger_problem
/* A ledger and a host table on run's output (the real host's getters). */
cf_instance *cf_new(cf_run *run);
/* Re-points ci's host at output (NULL: no options set). */
void cf_host_for(cf_run *run, cf_instance *ci, const cfg_output *output);
/* Creates the driver instance; prints FAIL name and returns -1 on refusal. */
int cf_create(cf_run *run, cf_instance *ci, const char *name);
void cf_close_now(cf_run *run, cf_instance *ci);
void cf_destroy(cf_run *run, cf_instance *ci);
/* Accepted messages without a completion yet. */
size_t cf_pending(cf_recorder *rec);
int cf_misrouted(cf_recorder *rec);
/* Reports contract violations seen by rec; returns 1 when there were some. */
int cf_violations(cf_run *run, cf_recorder *rec, const char *name);
/* Adds rec's refusal counts to the run's. */
void cf_count_refusals(cf_run *run, cf_recorder *rec);

/* ---- messages (conformance_messages.c) ---- */

/* Publishes count messages; returns the accepted count, sets *rc and *ms. */
size_t cf_publish(cf_run *run, cf_instance *ci, size_t count, obx_status *rc, int64_t *ms);
/* Drives poll until nothing is pending or the run's timeout; returns what is left. */
size_t cf_drain_all(cf_run *run, cf_instance **cis, size_t n);
size_t cf_drain(cf_run *run, cf_instance *ci);
/* Publishes count, waits for all completions, checks; returns 0 when it passed. */
int cf_publish_and_drain(cf_run *run, cf_instance *ci, const char *name, size_t count);

/* ---- the checks ---- */

void check_definition(cf_run *run);
void check_option_specs(cf_run *run);
void check_unknown_option(cf_run *run);
void check_create_failure(cf_run *run, const char *bad_output);
void check_batches(cf_run *run, cf_instance *ci);
void check_publish_bound(cf_run *run, cf_instance *ci);
void check_flush(cf_run *run, cf_instance *ci);
void check_close(cf_run *run, cf_instance *ci, const char *name, int use_destroy);
void check_close_twice(cf_run *run, cf_instance *ci);
void check_two_instances(cf_run *run);
void check_thread_handover(cf_run *run);
void check_probe(cf_run *run);
void check_threads(cf_run *run);
void check_refusals(cf_run *run);

#endif
