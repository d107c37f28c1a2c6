#include "poll/claimer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void claimer_configure(claimer *k, const relay_config *cfg, int run_length)
{
    k->ordered = cfg->ordering == ORDERING_AGGREGATE;
    k->batch_size = cfg->batch_size;
    k->min_heads = (cfg->batch_size + run_length - 1) / run_length;
    if (k->heads < k->min_heads || k->heads > k->batch_size)
        k->heads = k->batch_size;
    k->budget = (long long)cfg->max_batch_mb << 20;
    k->limit = cfg->batch_size;
    snprintf(k->max_payload, sizeof k->max_payload, "%d", cfg->max_payload_bytes);
    snprintf(k->run, sizeof k->run, "%d", run_length);
}

/*
 * An unordered claim starts after the furthest row this worker, or any
 * worker of the process, took in a full claim: before it the pending index
 * holds the batches in flight and rows just recorded, which a claim from the
 * first row would step over one by one (core/DESIGN.md has the figures).
 * What can wait before that place (a retry come due, a late commit with a
 * lower id, rows a lost session released) is found by a claim from the
 * first row: after any claim of this worker that was not full, and every
 * RESTART_EVERY claims while the backlog lasts.
 */
#define RESTART_EVERY 8

void claimer_share_place(claimer *k, atomic_llong *furthest)
{
    k->furthest = furthest;
}

static const char *after_row(claimer *k)
{
    if (!k->after_row || ++k->claims_after >= RESTART_EVERY) {
        k->claims_after = 0;
        return NULL;
    }
    long long furthest = k->furthest ? atomic_load(k->furthest) : 0;
    snprintf(k->after_text, sizeof k->after_text, "%lld",
             furthest > k->after_row ? furthest : k->after_row);
    return k->after_text;
}

static void took_up_to(claimer *k, const PGresult *claim, int rows)
{
    k->after_row = rows == k->limit ? atoll(PQgetvalue(claim, rows - 1, ROW_ID)) : 0;
    if (!k->after_row || !k->furthest)
        return;
    long long seen = atomic_load(k->furthest);
    while (k->after_row > seen && !atomic_compare_exchange_weak(k->furthest, &seen, k->after_row))
        ;
}

/*
 * The claim itself stops at the budget, but it sizes every row it locks or
 * reads first: asking for about the budget's worth of rows of the last
 * claim's size (and one more) keeps a backlog of large rows from being
 * sized a whole batch at a time for a few rows each.
 */
static int rows_that_fit(const claimer *k)
{
    if (!k->row_bytes)
        return k->batch_size;
    long long fit = k->budget / k->row_bytes + 1;
    return fit < k->batch_size ? (int)fit : k->batch_size;
}

static void learn_row_bytes(claimer *k, const PGresult *claim, int rows)
{
    if (rows == 0)
        return;
    long long bytes = 0;
    for (int r = 0; r < rows; r++)
        bytes += PQgetlength(claim, r, ROW_PAYLOAD) + PQgetlength(claim, r, ROW_HEADERS);
    k->row_bytes = bytes / rows + 1;
}

int claimer_params(claimer *k, const char *params[CLAIM_PARAMS])
{
    k->limit = rows_that_fit(k);
    snprintf(k->batch, sizeof k->batch, "%d", k->limit);
    params[CLAIM_BATCH] = k->batch;
    params[CLAIM_MAX_PAYLOAD] = k->max_payload;
    if (!k->ordered) {
        params[CLAIM_AFTER_ROW] = after_row(k);
        return CLAIM_PARAMS_UNORDERED;
    }
    snprintf(k->heads_text, sizeof k->heads_text, "%d", k->heads < k->limit ? k->heads : k->limit);
    params[CLAIM_AFTER_TYPE] = k->after_type;
    params[CLAIM_AFTER_ID] = k->after_id;
    params[CLAIM_RUN] = k->run;
    params[CLAIM_HEADS] = k->heads_text;
    return CLAIM_PARAMS;
}

/*
 * Every head costs the walk an index descent, while the events of a run
 * behind it come from one range scan: a claim that takes fewer heads with
 * longer runs reads far less, and leaves the other heads to the other
 * workers, whose batches then overlap this one's instead of waiting for its
 * commit (a broker's round trips are what overlap hides). So the number of
 * heads follows what the last claim found. Runs that filled the batch: half
 * the heads it took next (longer runs). The limit reached without filling
 * it: as many heads as the runs' average length says would fill it, and no
 * halving again for PROBE_AFTER claims (when aggregates hold one event each,
 * every halving costs a batch half full). Fewer heads than the limit and
 * the batch not full: every due head was taken, nothing to learn. Never
 * fewer than the batch over the run length, so a driver that takes one
 * event per aggregate gets whole batches.
 */
#define PROBE_AFTER 16

static void learn_heads(claimer *k, int heads, int rows)
{
    if (rows == 0 || (heads < k->heads && rows < k->limit))
        return;
    int next;
    if (rows < k->limit) {
        next = (int)((long long)k->limit * heads / rows) + 1;
        k->calm = PROBE_AFTER;
    } else if (k->calm > 0) {
        k->calm--;
        return;
    } else {
        next = heads / 2;
    }
    k->heads = next < k->min_heads ? k->min_heads : next > k->batch_size ? k->batch_size : next;
}

void claimer_advance(claimer *k, const PGresult *claim)
{
    free(k->after_type);
    free(k->after_id);
    k->after_type = k->after_id = NULL;
    int rows = PQntuples(claim);
    learn_row_bytes(k, claim, rows);
    if (!k->ordered) { /* rows come in id order */
        took_up_to(k, claim, rows);
        return;
    }
    if (rows == 0 || PQgetisnull(claim, 0, ROW_AFTER_TYPE))
        return;
    /* the next walk starts after the last aggregate this one claimed */
    k->after_type = strdup(PQgetvalue(claim, 0, ROW_AFTER_TYPE));
    k->after_id = strdup(PQgetvalue(claim, 0, ROW_AFTER_ID));
    learn_heads(k, atoi(PQgetvalue(claim, 0, ROW_HEADS)), rows);
}

void claimer_free(claimer *k)
{
    free(k->after_type);
    free(k->after_id);
    k->after_type = k->after_id = NULL;
}
