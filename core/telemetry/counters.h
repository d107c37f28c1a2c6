/* What /metrics, /healthz and /readyz report beyond the totals: per-output
 * and per-route counts and latency histograms fed by the workers, statement
 * durations fed by the sessions, a heartbeat per thread, and the backlog
 * one thread polls (backlog.c). Everything is atomics or under a mutex:
 * workers write, the HTTP thread reads. Per-output and per-route entries are
 * keyed by name and route position, not by index, so they follow live
 * reloads (config generations) without being rebuilt. */
#ifndef OBX_COUNTERS_H
#define OBX_COUNTERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "config/config.h"
#include "obx/driver.h"

/* Upper bounds of the histogram buckets, in microseconds (a +Inf bucket
 * follows): 1 ms to 1 h, for a statement as for a backlog's lag. */
#define STATS_BUCKETS 18
extern const long long counters_bucket_us[STATS_BUCKETS];

typedef struct histogram {
    atomic_llong bucket[STATS_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
    atomic_llong sum_us;
} histogram;

/* Counts of decided outcomes (by the worker, before recording: a row whose
 * lease was lost meanwhile is counted here and again by its next owner). */
typedef struct outcome_counts {
    atomic_llong published, retried, dead, refused, deferred, released;
    atomic_llong dropped; /* by a drop route (routes only) */
} outcome_counts;

/* One output's measures, found by the output's name: an output that a live
 * reload keeps (or brings back) goes on counting where it was. Entries are
 * added, never removed, until counters_free. */
typedef struct output_stats {
    struct output_stats *next; /* set before the entry is published */
    char *name;
    outcome_counts n;
    atomic_llong in_flight;  /* built for this output in a batch, outcome not yet decided */
    histogram publish;       /* batch handed to the driver -> its acknowledgement seen */
    histogram commit_to_ack; /* the row's created_at -> its acknowledgement seen */
} output_stats;

/* One route's counts, found by its position in the config (1-based) and its
 * output: the labels of its series. */
typedef struct route_stats {
    struct route_stats *next;
    size_t position;
    char *output;
    outcome_counts n;
} route_stats;

/* The statements whose durations are measured (session_run's names). */
enum { STMT_CLAIM, STMT_RECORD, STMT_MARK, STMT_RENEW, STMT_PENDING, STMT_COUNT };
extern const char *const counters_statement_names[STMT_COUNT];

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
    const relay_config *cfg;         /* as started: workers, lease */
    _Atomic(output_stats *) outputs; /* lists read without a lock, added to under add_lock */
    _Atomic(route_stats *) routes;
    pthread_mutex_t add_lock;
    histogram statements[STMT_COUNT];
    int beat_count;           /* cfg->workers + BEAT_EXTRA */
    atomic_llong *beats;      /* monotonic ms of the last progress; 0: not started */
    long long stale_ms;       /* a beat older than this means the thread is stuck (at start) */
    atomic_llong *open_since; /* per beat slot: when its oldest open transaction began; 0: none */
    pthread_mutex_t lock;     /* guards backlog */
    backlog_snapshot backlog;
} relay_metrics;

relay_metrics *counters_new(const relay_config *cfg);
void counters_free(relay_metrics *m);

/* The entry of the output named name, or of route `position` to output,
 * added when missing. Safe from any thread. */
output_stats *counters_output(relay_metrics *m, const char *name);
route_stats *counters_route(relay_metrics *m, size_t position, const char *output);

/* The heartbeat bound under the running config (poll_interval_ms may change
 * live): the larger of the bounds at start and under current. */
long long counters_stale_ms(const relay_metrics *m, const relay_config *current);

/* ---- fed by the engine's threads; each accepts m == NULL ---- */

/* This thread owns heartbeat slot `slot` (a worker index, or cfg->workers +
 * BEAT_*); counters_beat() then stamps it. */
void counters_thread_register(relay_metrics *m, int slot);
/* Has a thread that beats gone without progress past the bound under the
 * running config (current)? m may be NULL (then never). */
int counters_stalled(const relay_metrics *m, const relay_config *current, long long now);

/* Heartbeat slot `slot`'s thread as /healthz and /metrics name it: "worker
 * 3" (worker: the source's name for its threads), "cleanup", "backlog". */
void counters_thread_name(const relay_config *cfg, const char *worker, int slot, char *out,
                          size_t out_size);
void counters_beat(void);
/* Sleeps up to ms, waking early once *stop is set, beating meanwhile:
 * waiting is progress (a standby, a backoff). */
void counters_nap(const atomic_int *stop, long long ms);
/* This thread's oldest open relay transaction began at since_ms (monotonic;
 * 0: it has none), for /metrics. */
void counters_transaction_since(long long since_ms);
/* The age of the oldest open relay transaction of any thread, 0 when none. */
long long counters_oldest_transaction_ms(const relay_metrics *m, long long now);

/* A message was handed to output `output` of cfg (in flight until its
 * outcome is observed). */
void counters_sent(relay_metrics *m, const relay_config *cfg, size_t output);

/*
 * One message's decided outcome (OUTCOME_*), for output `output` of cfg (the
 * config generation that routed it). route: the route it took (NULL when it
 * never became a message). offered: it was handed to a driver (counted in
 * flight by counters_sent). sent_ms: when it was handed over (monotonic);
 * created_at_us: its commit time. refused: the driver refused it at publish.
 */
void counters_observe_completion(relay_metrics *m, const relay_config *cfg, size_t output,
                                 const cfg_route *route, int offered, long long created_at_us,
                                 long long sent_ms, int outcome, int refused);

/* An event a drop route matched, decided done. */
void counters_dropped(relay_metrics *m, const relay_config *cfg, const cfg_route *route);

/* A statement (by session_run's name) took elapsed_us. Others are ignored. */
void counters_observe_statement(relay_metrics *m, const char *stmt, long long elapsed_us);

/* Microseconds: monotonic (durations) and since the Unix epoch (created_at). */
long long counters_now_us(void);
long long counters_wall_us(void);

void histogram_observe(histogram *h, long long us);

#endif
