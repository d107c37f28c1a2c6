/* Records a batch's outcomes in one statement in the claim's transaction,
 * and commits it; when data in one row makes that statement fail, row by
 * row, so no row holds the others. */
#ifndef OBX_RECORD_H
#define OBX_RECORD_H

#include "event/outcome.h"
#include "poll/batch.h"
#include "poll/session.h"

/*
 * Writes decisions[i] for b->rows[i] and ends the claim's transaction. After
 * a lost session, records the rows still pending and free from a new one,
 * within a lease of the claim (and, once a stop's deadline has passed, not
 * at all). Adds what was recorded to counts[OUTCOME_*]. Returns how many rows
 * were recorded (fewer than b->count: taken over or the database unreachable).
 */
long long record_batch(session *s, const batch *b, const decision *decisions, long long claimed_at,
                       long long counts[OUTCOME_COUNT]);

#endif
