/* Claim results built in memory: a PGresult with the claim's columns in the
 * order of queries.h ROW_*, so batch and message code run without a server. */
#ifndef OBX_UNIT_CLAIM_RESULT_H
#define OBX_UNIT_CLAIM_RESULT_H

#include <libpq-fe.h>

#include "poll/queries.h"

#define CLAIM_COLUMNS (ROW_DUE + 1)

/* One claimed row, indexed by ROW_*; a NULL field is SQL NULL. */
typedef struct claim_row {
    const char *v[CLAIM_COLUMNS];
} claim_row;

/* A valid row of aggregate TYPE/ID: event_id = id, payload "{}", first
 * attempt, no headers, destination or walk end. */
claim_row claim_row_of(const char *id, const char *type, const char *agg_id,
                       const char *event_type);

/* The result of a claim that returned rows[0..count); free with PQclear. */
PGresult *claim_result(const claim_row *rows, int count);

#endif
