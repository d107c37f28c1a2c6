/* What /metrics, /healthz and /readyz report beyond the totals: per-output
 * and per-route counts and latency histograms fed by the workers, statement
 * durations fed by the sessions, a heartbeat per thread, and the backlog
 * one thread polls (backlog.c). Everything is atomics or under one mutex:
 * workers write, the HTTP thread reads. */
#ifndef OBX_STATS_H
#define OBX_STATS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "config.h"
#include "obx/driver.h"

/* Upper bounds of the histogram buckets, in microseconds (a +Inf bucket
 * follows): 1 ms to 1 h, for a statement as for a backlog's lag. */
#define STATS_BUCKETS 18
extern const long long stats_bucket_us[STATS_BUCKETS];

typedef struct histogram {
    atomic_llong bucket[STATS_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
    atomic_llong sum_us;
} histogram;

/* Counts of decided outcomes (by the worker, before recording: a row whose
 * lease was lost meanwhile is counted here and again by its next owner). */
typedef struct outcome_counts {
    atomic_llong published, retried, dead, refused, deferred, released;
} outcome_counts;

typedef struct output_stats {
    outcome_counts n;
    atomic_llong in_flight;  /* built for this output in a batch, outcome not yet decided */
    histogram publish;       /* batch handed to the driver -> its acknowledgement seen */
    histogram commit_to_ack; /* the row's created_at -> its acknowledgement seen */
} output_stats;

/* The statements whose durations are measured (session_run's names). */
enum { STMT_CLAIM, STMT_RECORD, STMT_MARK, STMT_RENEW, STMT_PENDING, STMT_COUNT };
extern const char *const stats_statement_names[STMT_COUNT];

/* The backlog as last polled (backlog.c). */
typedef struct backlog_snapshot {
    int polled;                /* at least one poll succeeded */
    int db_ok;                 /* the last poll succeeded */
    char db_error[256];        /* why the last poll failed (redacted) */
    long long polled_at_ms;    /* monotonic, of the last success */
    long long polls, failures; /* totals */
    long long pending, leased, dead;
    double oldest_pending_s;
} backlog_snapshot;

/* Heartbeat slots: one per worker, then these. */
enum { BEAT_CLEANUP, BEAT_BACKLOG, BEAT_EXTRA };

typedef struct relay_metrics {
    const relay_config *cfg;
    output_stats *outputs;  /* cfg->output_count */
    outcome_counts *routes; /* cfg->route_count */
    histogram statements[STMT_COUNT];
    int beat_count;       /* cfg->workers + BEAT_EXTRA */
    atomic_llong *beats;  /* monotonic ms of the last progress; 0: not started */
    long long stale_ms;   /* a beat older than this means the thread is stuck */
    pthread_mutex_t lock; /* guards backlog */
    backlog_snapshot backlog;
} relay_metrics;

relay_metrics *stats_new(const relay_config *cfg);
void stats_free(relay_metrics *m);

/* ---- fed by the engine's threads; each accepts m == NULL ---- */

/* This thread owns heartbeat slot `slot` (a worker index, or cfg->workers +
 * BEAT_*); stats_beat() then stamps it. */
void stats_thread_register(relay_metrics *m, int slot);
void stats_beat(void);

/* A message was built for its output (in flight until its outcome is observed). */
void stats_sent(relay_metrics *m, size_t output);

/*
 * One message's decided outcome (OUTCOME_*). msg: the message that was sent
 * (NULL when the row never became one: then it was not counted in flight
 * and has no route). sent_ms: when its batch was handed over (monotonic).
 * refused: the driver refused it at publish.
 */
void stats_observe_completion(relay_metrics *m, size_t output, const obx_message *msg,
                              long long sent_ms, int outcome, int refused);

/* A statement (by session_run's name) took elapsed_us. Others are ignored. */
void stats_observe_statement(relay_metrics *m, const char *stmt, long long elapsed_us);

/* Microseconds: monotonic (durations) and since the Unix epoch (created_at). */
long long stats_now_us(void);
long long stats_wall_us(void);

void histogram_observe(histogram *h, long long us);

#endif
