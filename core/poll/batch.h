/* A claimed batch: the claim's rows turned once into records the worker
 * uses, in outbox id order. */
#ifndef OBX_BATCH_H
#define OBX_BATCH_H

#include <libpq-fe.h>

#include "event/message.h"

typedef struct batch_row {
    int res_row; /* its row in the claim result (for batch_message) */
    long long id;
    const char *id_text, *event_id, *aggregate_type, *aggregate_id;
    const char *tid_text;    /* where the claim read it; NULL unless the table is a plain one */
    unsigned attempt;        /* this attempt, from 1 */
    long long payload_bytes; /* -1 when the claim did not measure it (small) */
} batch_row;

typedef struct batch {
    PGresult *res; /* owns every string above */
    int size;      /* the batch size: count never exceeds it */
    int count;
    batch_row *rows;   /* capacity: twice the batch size (a claim's rows before the cut) */
    int *by_aggregate; /* scratch: row indexes grouped by aggregate */
} batch;

void batch_init(batch *b, int size);
void batch_free(batch *b);

/* Takes a claim result (owned from now on) and sorts its rows by id; of
 * an ordered claim's run, drops the rows from its first one not due, and
 * cuts the runs to the batch size. */
void batch_take(batch *b, PGresult *res);
void batch_clear(batch *b);

/* Is the row with outbox id `id` one of the batch's? */
int batch_has(const batch *b, long long id);

/*
 * after[i] = 1 when an earlier row of the same aggregate in this batch was
 * not published (published[j] == 0): row i must not be marked ahead of it.
 */
void batch_after_failure(batch *b, const int *published, int *after);

/* Builds row i's message from its columns of the claim (message_build). */
int batch_message(const batch *b, int i, const message_source *src, obx_message *msg,
                  obx_message_ext *ext, const cfg_route **route, char *err, size_t err_size);

#endif
