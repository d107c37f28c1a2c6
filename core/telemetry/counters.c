#include "telemetry/counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "event/outcome.h"
#include "event/route.h"

const long long counters_bucket_us[STATS_BUCKETS] = {
    1000,    2500,    5000,    10000,    25000,    50000,    100000,    250000,     500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 300000000, 1800000000, 3600000000LL};

const char *const counters_statement_names[STMT_COUNT] = {[STMT_CLAIM] = "claim",
                                                          [STMT_RECORD] = "record",
                                                          [STMT_MARK] = "mark",
                                                          [STMT_RENEW] = "renew",
                                                          [STMT_PENDING] = "pending"};

/* The longest a healthy thread goes without a beat: a claim and a record
 * statement, each bounded by statement_timeout (the lease, at least 10 s,
 * as session.c sets it), and an idle wait of poll_interval_ms; three
 * statements' worth leaves room for a slow database. */
static long long stale_bound_ms(const relay_config *cfg)
{
    long long statement = cfg->lease_ms > 10000 ? cfg->lease_ms : 10000;
    return 3 * statement + cfg->poll_interval_ms;
}

relay_metrics *counters_new(const relay_config *cfg)
{
    relay_metrics *m = calloc(1, sizeof *m);
    m->cfg = cfg;
    m->beat_count = cfg->workers + BEAT_EXTRA;
    m->beats = calloc((size_t)m->beat_count, sizeof *m->beats);
    m->open_since = calloc((size_t)m->beat_count, sizeof *m->open_since);
    m->stale_ms = stale_bound_ms(cfg);
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->add_lock, NULL);
    return m;
}

void counters_free(relay_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->add_lock);
    for (output_stats *o = atomic_load(&m->outputs), *next; o; o = next) {
        next = o->next;
        free(o->name);
        free(o);
    }
    for (route_stats *r = atomic_load(&m->routes), *next; r; r = next) {
        next = r->next;
        free(r->output);
        free(r);
    }
    free(m->beats);
    free(m->open_since);
    free(m);
}

long long counters_stale_ms(const relay_metrics *m, const relay_config *current)
{
    long long now = current ? stale_bound_ms(current) : 0;
    return now > m->stale_ms ? now : m->stale_ms;
}

static output_stats *find_output(output_stats *o, const char *name)
{
    while (o && strcmp(o->name, name) != 0)
        o = o->next;
    return o;
}

/* Readers walk the list without a lock: an entry is complete before the
 * release store that publishes it, and never changes or goes away after. */
output_stats *counters_output(relay_metrics *m, const char *name)
{
    output_stats *o = find_output(atomic_load_explicit(&m->outputs, memory_order_acquire), name);
    if (o)
        return o;
    pthread_mutex_lock(&m->add_lock);
    output_stats *head = atomic_load_explicit(&m->outputs, memory_order_relaxed);
    if (!(o = find_output(head, name))) {
        o = calloc(1, sizeof *o);
        o->name = strdup(name);
        o->next = head;
        atomic_store_explicit(&m->outputs, o, memory_order_release);
    }
    pthread_mutex_unlock(&m->add_lock);
    return o;
}

static route_stats *find_route(route_stats *r, size_t position, const char *output)
{
    while (r && (r->position != position || strcmp(r->output, output) != 0))
        r = r->next;
    return r;
}

route_stats *counters_route(relay_metrics *m, size_t position, const char *output)
{
    route_stats *r =
        find_route(atomic_load_explicit(&m->routes, memory_order_acquire), position, output);
    if (r)
        return r;
    pthread_mutex_lock(&m->add_lock);
    route_stats *head = atomic_load_explicit(&m->routes, memory_order_relaxed);
    if (!(r = find_route(head, position, output))) {
        r = calloc(1, sizeof *r);
        r->position = position;
        r->output = strdup(output);
        r->next = head;
        atomic_store_explicit(&m->routes, r, memory_order_release);
    }
    pthread_mutex_unlock(&m->add_lock);
    return r;
}

static _Thread_local atomic_llong *my_beat, *my_open_since;

void counters_thread_register(relay_metrics *m, int slot)
{
    int mine = m && slot >= 0 && slot < m->beat_count;
    my_beat = mine ? &m->beats[slot] : NULL;
    my_open_since = mine ? &m->open_since[slot] : NULL;
    log_thread_source(m ? m->cfg->source_name : NULL); /* every engine thread registers */
    counters_beat();
}

void counters_transaction_since(long long since_ms)
{
    if (my_open_since)
        atomic_store_explicit(my_open_since, since_ms, memory_order_relaxed);
}

long long counters_oldest_transaction_ms(const relay_metrics *m, long long now)
{
    long long oldest = 0;
    for (int i = 0; m && i < m->beat_count; i++) {
        long long since = atomic_load_explicit(&m->open_since[i], memory_order_relaxed);
        if (since && now - since > oldest)
            oldest = now - since;
    }
    return oldest;
}

void counters_beat(void)
{
    if (my_beat)
        atomic_store_explicit(my_beat, now_ms(), memory_order_relaxed);
}

void counters_nap(const atomic_int *stop, long long ms)
{
    for (long long slept = 0; slept < ms && !atomic_load(stop); slept += 50) {
        counters_beat();
        usleep(1000 * (ms - slept < 50 ? ms - slept : 50));
    }
}

long long counters_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

long long counters_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void histogram_observe(histogram *h, long long us)
{
    if (us < 0)
        us = 0; /* clocks of two hosts: created_at may be a little ahead */
    int i = 0;
    while (i < STATS_BUCKETS && us > counters_bucket_us[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void counters_sent(relay_metrics *m, const relay_config *cfg, size_t output)
{
    if (m && output < cfg->output_count)
        atomic_fetch_add_explicit(&counters_output(m, cfg->outputs[output].name)->in_flight, 1,
                                  memory_order_relaxed);
}

static void count_outcome(outcome_counts *c, int outcome, int refused)
{
    static const size_t at[OUTCOME_COUNT] = {
        [OUTCOME_PUBLISHED] = offsetof(outcome_counts, published),
        [OUTCOME_RETRY] = offsetof(outcome_counts, retried),
        [OUTCOME_DEAD] = offsetof(outcome_counts, dead),
        [OUTCOME_RELEASE] = offsetof(outcome_counts, released),
        [OUTCOME_DEFER] = offsetof(outcome_counts, deferred),
    };
    if (outcome >= 0 && outcome < OUTCOME_COUNT)
        atomic_fetch_add_explicit((atomic_llong *)((char *)c + at[outcome]), 1,
                                  memory_order_relaxed);
    if (refused)
        atomic_fetch_add_explicit(&c->refused, 1, memory_order_relaxed);
}

void counters_observe_completion(relay_metrics *m, const relay_config *cfg, size_t output,
                                 const cfg_route *route, int offered, long long created_at_us,
                                 long long sent_ms, int outcome, int refused)
{
    if (!m || output >= cfg->output_count)
        return;
    output_stats *o = counters_output(m, cfg->outputs[output].name);
    count_outcome(&o->n, outcome, refused);
    if (offered)
        atomic_fetch_sub_explicit(&o->in_flight, 1, memory_order_relaxed);
    if (!route)
        return;
    count_outcome(&counters_route(m, (size_t)(route - cfg->routes) + 1, route->output)->n, outcome,
                  refused);
    if (outcome != OUTCOME_PUBLISHED)
        return;
    histogram_observe(&o->publish, counters_now_us() - sent_ms * 1000);
    histogram_observe(&o->commit_to_ack, counters_wall_us() - created_at_us);
}

void counters_dropped(relay_metrics *m, const relay_config *cfg, const cfg_route *route)
{
    if (m && route)
        atomic_fetch_add_explicit(
            &counters_route(m, (size_t)(route - cfg->routes) + 1, route->output)->n.dropped, 1,
            memory_order_relaxed);
}

void counters_observe_statement(relay_metrics *m, const char *stmt, long long elapsed_us)
{
    if (!m)
        return;
    for (int i = 0; i < STMT_COUNT; i++)
        if (strcmp(stmt, counters_statement_names[i]) == 0) {
            histogram_observe(&m->statements[i], elapsed_us);
            return;
        }
}

void counters_thread_name(const relay_config *cfg, const char *worker, int slot, char *out,
                          size_t out_size)
{
    if (slot < cfg->workers)
        snprintf(out, out_size, "%s-%d", worker, slot); /* a label value: no space */
    else
        snprintf(out, out_size, "%s", slot - cfg->workers == BEAT_CLEANUP ? "cleanup" : "backlog");
}

int counters_stalled(const relay_metrics *m, const relay_config *current, long long now)
{
    if (!m)
        return 0;
    long long stale_ms = counters_stale_ms(m, current);
    for (int i = 0; i < m->beat_count; i++) {
        long long beat = atomic_load(&m->beats[i]);
        if (beat && now - beat > stale_ms)
            return 1;
    }
    return 0;
}
