/* What one claim tells the next: where an ordered claim's walk starts,
 * how many aggregates' heads it takes, where an unordered claim starts, how
 * many rows fit in relay.max_batch_mb. One
 * per worker (its lanes share it). */
#ifndef OBX_CLAIMER_H
#define OBX_CLAIMER_H

#include <libpq-fe.h>
#include <stdatomic.h>

#include "config/config.h"
#include "poll/queries.h"

typedef struct claimer {
    int ordered, batch_size, min_heads, heads;
    int calm;                    /* full claims to take before fewer heads are tried again */
    char *after_type, *after_id; /* the last aggregate claimed; NULL: from the first */
    /* unordered: the last id of this claimer's previous full claim (0: none,
     * from the first row), the highest any claimer sharing `furthest` took,
     * and the claims since the last from the first row */
    long long after_row;
    atomic_llong *furthest; /* NULL: this claimer's own place only */
    int claims_after;
    char after_text[24];
    /* relay.max_batch_mb in bytes, the last claim's bytes a row (0: none
     * yet), and the rows the claim in flight asked for (at most batch_size) */
    long long budget, row_bytes;
    int limit;
    char batch[16], max_payload[24], run[16], heads_text[16];
} claimer;

/* run_length: events of one aggregate per claim (1 unless every driver keeps
 * order). Again after a reload: the walk keeps its place. */
void claimer_configure(claimer *k, const relay_config *cfg, int run_length);

/* Unordered claims of the claimers given the same `furthest` (a process's
 * workers) start after the furthest row any of them took. */
void claimer_share_place(claimer *k, atomic_llong *furthest);

/* The next claim's parameters; returns how many. */
int claimer_params(claimer *k, const char *params[CLAIM_PARAMS]);

/* Learns from a claim's result (not taken over). */
void claimer_advance(claimer *k, const PGresult *claim);

void claimer_free(claimer *k);

#endif
