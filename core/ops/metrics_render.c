#include "ops/metrics_render.h"

#include <stdio.h>
#include <stdlib.h>

#include "host/source.h"
#include "telemetry/counters.h"
#include "telemetry/exposition.h"

static void legacy_totals(FILE *f, relay_state *st)
{
    relay_stats *e = &st->stats;
    expo_total(f, "outbox_relay_claimed_total", "Rows claimed.", atomic_load(&e->claimed));
    expo_total(f, "outbox_relay_published_total", "Rows marked published after a broker ack.",
          atomic_load(&e->published));
    expo_total(f, "outbox_relay_retried_total", "Failed attempts scheduled for a retry.",
          atomic_load(&e->retried));
    expo_total(f, "outbox_relay_dead_total", "Rows dead-lettered.", atomic_load(&e->dead));
    expo_total(f, "outbox_relay_released_total", "Leases released unfinished at shutdown.",
          atomic_load(&e->released));
    expo_total(f, "outbox_relay_deferred_total",
          "Rows put back, no attempt counted, while their output was unavailable.",
          atomic_load(&e->deferred));
    expo_total(f, "outbox_relay_dead_forwarded_total",
          "Dead events the dead_letter output acknowledged.", atomic_load(&e->dead_forwarded));
}

static void outputs_up(FILE *f, relay_state *st, const config_gen *gen)
{
    const relay_config *cfg = gen->cfg;
    long long outages[cfg->output_count + 1];
    expo_family(f, "outbox_relay_output_up", "gauge",
           "1 while the output takes messages, 0 while it is paused as unavailable.");
    for (size_t i = 0; i < cfg->output_count; i++) {
        int up;
        health_read(&gen->health[i], &up, &outages[i]);
        fputs("outbox_relay_output_up{output=\"", f);
        expo_label(f, cfg->outputs[i].name);
        fprintf(f, "\"} %d\n", up);
    }
    expo_family(f, "outbox_relay_output_paused", "gauge",
           "1 while an operator has paused the output (or the whole source): outbox-relay pause.");
    for (size_t i = 0; i < cfg->output_count; i++) {
        fputs("outbox_relay_output_paused{output=\"", f);
        expo_label(f, cfg->outputs[i].name);
        fprintf(f, "\"} %d\n", pauses_output(&st->pauses, cfg->outputs[i].name));
    }
    if (!st->metrics)
        return;
    expo_family(f, "outbox_relay_output_outages_total", "counter",
           "Times the output was paused as unavailable.");
    for (size_t i = 0; i < cfg->output_count; i++) {
        fputs("outbox_relay_output_outages_total{output=\"", f);
        expo_label(f, cfg->outputs[i].name);
        fprintf(f, "\"} %lld\n", outages[i]);
    }
}

/* One counter family over every output (route == 0) or route of cfg (the
 * running generation's: its entries by name and position, telemetry/counters.h). */
static void per_counter(FILE *f, relay_metrics *m, const relay_config *cfg, const char *name,
                        const char *help, size_t field, int routes)
{
    expo_family(f, name, "counter", help);
    size_t n = routes ? cfg->route_count : cfg->output_count;
    for (size_t i = 0; i < n; i++) {
        outcome_counts *c = routes ? &counters_route(m, i + 1, cfg->routes[i].output)->n
                                   : &counters_output(m, cfg->outputs[i].name)->n;
        const char *output = routes ? cfg->routes[i].output : cfg->outputs[i].name;
        fprintf(f, "%s{", name);
        if (routes)
            fprintf(f, "route=\"%zu\",", i + 1);
        fputs("output=\"", f);
        expo_label(f, output);
        fprintf(f, "\"} %lld\n", atomic_load((atomic_llong *)((char *)c + field)));
    }
}

#define PER(f, m, name, help, field, routes)                                                       \
    per_counter(f, m, cfg, name, help, offsetof(outcome_counts, field), routes)

static void outcomes(FILE *f, relay_metrics *m, const relay_config *cfg)
{
    for (int routes = 0; routes <= 1; routes++) {
        const char *const *names =
            routes ? (const char *const[]){"outbox_relay_route_published_total",
                                           "outbox_relay_route_retried_total",
                                           "outbox_relay_route_dead_lettered_total",
                                           "outbox_relay_route_refused_total",
                                           "outbox_relay_route_deferred_total"}
                   : (const char *const[]){
                         "outbox_relay_output_published_total", "outbox_relay_output_retried_total",
                         "outbox_relay_output_dead_lettered_total",
                         "outbox_relay_output_refused_total", "outbox_relay_output_deferred_total"};
        PER(f, m, names[0], "Messages the broker acknowledged (counted when decided).", published,
            routes);
        PER(f, m, names[1], "Messages that failed and were scheduled for a retry.", retried,
            routes);
        PER(f, m, names[2], "Messages dead-lettered.", dead, routes);
        PER(f, m, names[3], "Messages the driver refused at publish (also counted by outcome).",
            refused, routes);
        PER(f, m, names[4], "Messages put back, no attempt counted: the output was unavailable.",
            deferred, routes);
    }
    PER(f, m, "outbox_relay_route_dropped_total",
        "Events a drop route matched: marked done, never published.", dropped, 1);
    expo_family(f, "outbox_relay_output_in_flight", "gauge",
           "Messages of the batches being published to the output, outcome not decided yet.");
    for (size_t i = 0; i < cfg->output_count; i++) {
        fputs("outbox_relay_output_in_flight{output=\"", f);
        expo_label(f, cfg->outputs[i].name);
        fprintf(f, "\"} %lld\n", atomic_load(&counters_output(m, cfg->outputs[i].name)->in_flight));
    }
}

/* One histogram's series; lname/lvalue: its label. */
static void histogram_series(FILE *f, const char *name, const char *lname, const char *lvalue,
                             histogram *h)
{
    long long cumulative = 0;
    for (int b = 0; b <= STATS_BUCKETS; b++) {
        cumulative += atomic_load(&h->bucket[b]);
        fprintf(f, "%s_bucket{%s=\"", name, lname);
        expo_label(f, lvalue);
        if (b < STATS_BUCKETS)
            fprintf(f, "\",le=\"%g\"} %lld\n", counters_bucket_us[b] / 1e6, cumulative);
        else
            fprintf(f, "\",le=\"+Inf\"} %lld\n", cumulative);
    }
    /* _count is the +Inf bucket as read, so the two always agree */
    fprintf(f, "%s_sum{%s=\"", name, lname);
    expo_label(f, lvalue);
    fprintf(f, "\"} %.6f\n%s_count{%s=\"", atomic_load(&h->sum_us) / 1e6, name, lname);
    expo_label(f, lvalue);
    fprintf(f, "\"} %lld\n", cumulative);
}

static void histograms(FILE *f, relay_metrics *m, const relay_config *cfg)
{
    expo_family(f, "outbox_relay_publish_duration_seconds", "histogram",
           "Per published message: from its batch being handed to the driver to the worker "
           "having the batch's acknowledgements.");
    for (size_t i = 0; i < cfg->output_count; i++)
        histogram_series(f, "outbox_relay_publish_duration_seconds", "output", cfg->outputs[i].name,
                         &counters_output(m, cfg->outputs[i].name)->publish);
    expo_family(f, "outbox_relay_commit_to_ack_seconds", "histogram",
           "Per published message: from the row's created_at to its acknowledgement seen by "
           "the worker (wall clocks of the database and the relay host).");
    for (size_t i = 0; i < cfg->output_count; i++)
        histogram_series(f, "outbox_relay_commit_to_ack_seconds", "output", cfg->outputs[i].name,
                         &counters_output(m, cfg->outputs[i].name)->commit_to_ack);
    expo_family(f, "outbox_relay_statement_duration_seconds", "histogram",
           "The engine's statements: claim, record (with failures), mark (all published), "
           "renew (keeps a batch's transaction from idling), pending (idle check).");
    for (int s = 0; s < STMT_COUNT; s++)
        histogram_series(f, "outbox_relay_statement_duration_seconds", "statement",
                         counters_statement_names[s], &m->statements[s]);
}

static void backlog(FILE *f, relay_metrics *m)
{
    pthread_mutex_lock(&m->lock);
    backlog_snapshot b = m->backlog;
    pthread_mutex_unlock(&m->lock);
    if (b.polled) {
        expo_gauge(f, "outbox_relay_pending_rows",
              "Rows neither published nor dead, in flight included (last poll).",
              (double)b.pending);
        expo_gauge(f, "outbox_relay_leased_rows",
              "Pending rows held in flight by a claim transaction (last poll).", (double)b.leased);
        expo_gauge(f, "outbox_relay_dead_rows", "Dead-lettered rows not requeued (last poll).",
              (double)b.dead);
        expo_gauge(f, "outbox_relay_oldest_pending_age_seconds",
              "Age of the oldest pending row: how far behind the relay is (last poll).",
              b.oldest_pending_s);
        expo_gauge(f, "outbox_relay_backlog_poll_age_seconds",
              "Seconds since the backlog gauges were last polled successfully.",
              (now_ms() - b.polled_at_ms) / 1000.0);
    }
    expo_total(f, "outbox_relay_backlog_polls_total", "Successful backlog polls.", b.polls);
    expo_total(f, "outbox_relay_backlog_poll_failures_total", "Failed backlog polls.", b.failures);
}

static void heartbeats(FILE *f, relay_state *st, relay_metrics *m)
{
    expo_family(f, "outbox_relay_thread_heartbeat_age_seconds", "gauge",
           "Seconds since each engine thread last made progress (/healthz fails past a bound).");
    long long now = now_ms();
    for (int i = 0; i < m->beat_count; i++) {
        long long beat = atomic_load(&m->beats[i]);
        if (!beat)
            continue;
        char name[48];
        counters_thread_name(st->cfg, st->src->thread, i, name, sizeof name);
        fprintf(f, "outbox_relay_thread_heartbeat_age_seconds{thread=\"%s\"} %.3f\n", name,
                (now - beat) / 1000.0);
    }
    expo_gauge(f, "outbox_relay_oldest_transaction_age_seconds",
          "Age of the oldest open claim transaction (it holds the database's xmin horizon; "
          "bounded by relay.max_transaction_ms while acknowledgements are awaited).",
          counters_oldest_transaction_ms(m, now) / 1000.0);
}

static void squats(FILE *f, relay_state *st)
{
    expo_family(f, "outbox_relay_lock_squatted", "gauge",
                "1 while a session of a role other than the relay's holds the relay's advisory "
                "lock of this kind (what it guards is stopped until it lets go), else 0.");
    for (int k = 0; k < LOCK_KINDS; k++) {
        char who[8];
        fprintf(f, "outbox_relay_lock_squatted{lock=\"%s\"} %d\n", lock_kind_names[k],
                lock_squat_read(&st->squats, (lock_kind)k, who, sizeof who));
    }
}

char *metrics_render(relay_state *st, size_t *len)
{
    char *body = NULL;
    FILE *f = open_memstream(&body, len);
    if (!f)
        return NULL;
    /* the outputs and routes of the running config generation (live reload) */
    config_gen *gen = state_take_gen(st);
    /* kept after a fatal end (run/engine.c), so a source that stopped shows
     * as down rather than vanish from the scrape */
    expo_family(f, "outbox_relay_source_up", "gauge",
                "1 while the source's threads run; 0 before they start (its database not "
                "reached yet) and after it ended for good (the log and /readyz say why).");
    fprintf(f, "outbox_relay_source_up %d\n", atomic_load(&st->running));
    legacy_totals(f, st);
    outputs_up(f, st, gen);
    relay_metrics *m = st->metrics;
    if (m) {
        outcomes(f, m, gen->cfg);
        histograms(f, m, gen->cfg);
        backlog(f, m);
        heartbeats(f, st, m);
    }
    squats(f, st);
    if (st->src->metrics)
        st->src->metrics(f, st);
    gen_release(gen);
    if (fclose(f) != 0) {
        free(body);
        return NULL;
    }
    return body;
}
