/* What one claim tells the next: where an ordered claim's walk starts and
 * how many aggregates' heads it takes. One per claiming session. */
#ifndef OBX_CLAIMER_H
#define OBX_CLAIMER_H

#include <libpq-fe.h>

#include "config.h"
#include "queries.h"

typedef struct claimer {
    int ordered, batch_size, min_heads, heads;
    int calm; /* full claims to take before fewer heads are tried again */
    char *after_type, *after_id; /* the last aggregate claimed; NULL: from the first */
    char after_row[24];          /* unordered: the last id of a full claim; "": from the first */
    int claims_after;            /* unordered claims since the last from the first */
    char batch[16], max_payload[24], run[16], heads_text[16];
} claimer;

/* run_length: events of one aggregate per claim (1 unless every driver keeps
 * order). Again after a reload: the walk keeps its place. */
void claimer_configure(claimer *k, const relay_config *cfg, int run_length);

/* The next claim's parameters; returns how many. */
int claimer_params(claimer *k, const char *params[CLAIM_PARAMS]);

/* Learns from a claim's result (not taken over). */
void claimer_advance(claimer *k, const PGresult *claim);

void claimer_free(claimer *k);

#endif
