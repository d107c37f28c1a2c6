#include "poll/poll_kind.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "base/service_notify.h"
#include "db/partitions.h"
#include "poll/cleanup.h"
#include "poll/poll_admin.h"
#include "poll/poll_purge.h"
#include "poll/queries.h"
#include "poll/worker.h"

typedef struct poll_run {
    relay_state *st;
    worker **workers;
    pthread_t *threads;
    int joined; /* workers [0, joined) have ended */
    pthread_t cleaner;
    int cleaning;
} poll_run;

static void describe(const relay_config *cfg, int drain, char *line, size_t line_size)
{
    snprintf(line, line_size, "%d workers, batch %d, ordering %s, %zu outputs%s", cfg->workers,
             cfg->batch_size, cfg->ordering == ORDERING_AGGREGATE ? "aggregate" : "none",
             cfg->output_count, drain ? ", drain" : "");
}

static void *start(relay_state *st, const char *payload_type)
{
    const relay_config *cfg = st->cfg;
    poll_run *run = calloc(1, sizeof *run);
    run->st = st;
    run->workers = calloc(cfg->workers, sizeof *run->workers);
    run->threads = calloc(cfg->workers, sizeof *run->threads);
    for (int i = 0; i < cfg->workers; i++) {
        run->workers[i] = worker_new(st, i, payload_type);
        pthread_create(&run->threads[i], NULL, worker_main, run->workers[i]);
    }
    char ready[96];
    snprintf(ready, sizeof ready, "READY=1\nSTATUS=relaying: %d workers%s", cfg->workers,
             st->drain ? ", drain" : "");
    notify_send(ready);
    run->cleaning =
        (partitions_on(cfg) || (cfg->retention == RETAIN_MARK && cfg->retention_hours > 0)) &&
        !st->drain;
    if (run->cleaning)
        pthread_create(&run->cleaner, NULL, cleanup_main, st);
    return run;
}

static int join(void *arg, int ms)
{
    poll_run *run = arg;
    while (run->joined < run->st->cfg->workers) {
        struct timespec until = clock_deadline(ms);
        if (pthread_timedjoin_np(run->threads[run->joined], NULL, &until) != 0)
            return 0;
        run->joined++;
    }
    return 1;
}

/* A stop must not wait for PostgreSQL: a claim running when it comes is
 * cancelled at once (no new batch starts), anything still running past the
 * deadline is cancelled too (its rows are free again when its transaction
 * ends). */
static void stopping(void *arg, int past)
{
    poll_run *run = arg;
    for (int k = run->joined; k < run->st->cfg->workers; k++)
        worker_cancel(run->workers[k], !past);
}

static void finish(void *arg)
{
    poll_run *run = arg;
    if (run->cleaning)
        pthread_join(run->cleaner, NULL);
    for (int i = 0; i < run->st->cfg->workers; i++)
        worker_free(run->workers[i]);
    free(run->workers);
    free(run->threads);
    free(run);
}

const source_kind poll_kind = {
    .preflight = queries_prepare,
    .name = "poll",
    .thread = "worker",
    .describe = describe,
    .start = start,
    .join = join,
    .stopping = stopping,
    .finish = finish,
    .status = poll_command_status,
    .replayable = "o.{c.published_at} IS NOT NULL",
    .dead_events =
        "SELECT {c.id}::text AS dead_key, {c.event_id}::text AS event_id, {c.event_type}::text AS "
        "event_type,"
        " {c.aggregate_type}::text AS aggregate_type, {c.aggregate_id}::text AS aggregate_id,"
        " {c.payload} AS payload, {c.headers}::text AS headers,"
        " {c.dead_at} AS dead_at, (extract(epoch FROM {c.dead_at}) * 1000000)::bigint AS "
        "dead_at_us,"
        " {c.attempts} AS attempts, coalesce({c.last_error}, '') AS error,"
        " (extract(epoch FROM {c.created_at}) * 1000000)::bigint AS created_at_us FROM {table}"
        " WHERE {c.dead_at} IS NOT NULL AND {c.published_at} IS NULL",
    /* claim, record and mark; cleanup deletes published rows past retention */
    .rights = ":SELECT,UPDATE,DELETE",
    .requeue = poll_command_requeue,
    .purge_select = poll_purge_select,
    .purge_delete = poll_purge_delete,
};
