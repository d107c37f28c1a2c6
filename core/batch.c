#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "queries.h"

void batch_init(batch *b, int capacity)
{
    memset(b, 0, sizeof *b);
    b->rows = calloc(capacity, sizeof *b->rows);
    b->by_aggregate = calloc(capacity, sizeof *b->by_aggregate);
}

void batch_free(batch *b)
{
    batch_clear(b);
    free(b->rows);
    free(b->by_aggregate);
}

void batch_clear(batch *b)
{
    PQclear(b->res);
    b->res = NULL;
    b->count = 0;
}

static int by_id(const void *a, const void *b)
{
    long long x = ((const batch_row *)a)->id, y = ((const batch_row *)b)->id;
    return (x > y) - (x < y);
}

void batch_take(batch *b, PGresult *res)
{
    batch_clear(b);
    b->res = res;
    b->count = PQntuples(res);
    for (int i = 0; i < b->count; i++) {
        batch_row *r = &b->rows[i];
        r->res_row = i;
        r->id_text = PQgetvalue(res, i, ROW_ID);
        r->id = strtoll(r->id_text, NULL, 10);
        r->event_id = PQgetvalue(res, i, ROW_EVENT_ID);
        r->aggregate_type = PQgetvalue(res, i, ROW_AGGREGATE_TYPE);
        r->aggregate_id = PQgetvalue(res, i, ROW_AGGREGATE_ID);
        r->attempt = (unsigned)strtoul(PQgetvalue(res, i, ROW_ATTEMPTS), NULL, 10) + 1;
        r->payload_bytes = PQgetisnull(res, i, ROW_PAYLOAD_BYTES)
                               ? -1
                               : strtoll(PQgetvalue(res, i, ROW_PAYLOAD_BYTES), NULL, 10);
    }
    qsort(b->rows, b->count, sizeof *b->rows, by_id);
}

/* Groups rows by aggregate, in id order within each. */
static int by_aggregate_then_id(const void *a, const void *b, void *rows_arg)
{
    const batch_row *rows = rows_arg;
    const batch_row *x = &rows[*(const int *)a], *y = &rows[*(const int *)b];
    int c = strcmp(x->aggregate_type, y->aggregate_type);
    if (c == 0)
        c = strcmp(x->aggregate_id, y->aggregate_id);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int same_aggregate(const batch_row *x, const batch_row *y)
{
    return strcmp(x->aggregate_type, y->aggregate_type) == 0 &&
           strcmp(x->aggregate_id, y->aggregate_id) == 0;
}

void batch_after_failure(batch *b, const int *published, int *after)
{
    for (int i = 0; i < b->count; i++)
        b->by_aggregate[i] = i;
    qsort_r(b->by_aggregate, b->count, sizeof *b->by_aggregate, by_aggregate_then_id, b->rows);
    int failed = 0;
    for (int k = 0; k < b->count; k++) {
        int i = b->by_aggregate[k];
        if (k > 0 && !same_aggregate(&b->rows[b->by_aggregate[k - 1]], &b->rows[i]))
            failed = 0;
        after[i] = failed;
        failed |= !published[i];
    }
}
