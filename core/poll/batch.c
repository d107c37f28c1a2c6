#include "poll/batch.h"

#include <stdlib.h>
#include <string.h>

#include "poll/queries.h"

void batch_init(batch *b, int size)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    b->rows = calloc(2 * (size_t)size, sizeof *b->rows); /* an ordered claim's, before the cut */
    b->by_aggregate = calloc(2 * (size_t)size, sizeof *b->by_aggregate);
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

int batch_has(const batch *b, long long id)
{
    batch_row key = {.id = id};
    return bsearch(&key, b->rows, (size_t)b->count, sizeof *b->rows, by_id) != NULL;
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

/* b->by_aggregate: row indexes grouped by aggregate, in id order within each. */
static void group_by_aggregate(batch *b)
{
    for (int i = 0; i < b->count; i++)
        b->by_aggregate[i] = i;
    qsort_r(b->by_aggregate, b->count, sizeof *b->by_aggregate, by_aggregate_then_id, b->rows);
}

static int is_due(const PGresult *res, int row)
{
    return PQgetisnull(res, row, ROW_DUE) || PQgetvalue(res, row, ROW_DUE)[0] == 't';
}

/*
 * An ordered claim's run may hold an event that is not due (it waits for a
 * retry): it and every later row of its aggregate are dropped, so nothing
 * overtakes it. They are not offered nor recorded; their locks end with the
 * claim's transaction. Rows are in id order.
 */
static void drop_not_due(batch *b)
{
    int *due = malloc(b->count * sizeof *due), *behind = malloc(b->count * sizeof *behind);
    for (int i = 0; i < b->count; i++)
        due[i] = is_due(b->res, b->rows[i].res_row);
    batch_after_failure(b, due, behind);
    int kept = 0;
    for (int i = 0; i < b->count; i++)
        if (due[i] && !behind[i])
            b->rows[kept++] = b->rows[i];
    b->count = kept;
    free(due);
    free(behind);
}

/*
 * An ordered claim's runs, each up to the batch over the heads rounded up,
 * may exceed the batch: rows are kept by their place in their run, every
 * head first, then every second event, and so on; of the last place kept,
 * the lowest ids. Only ends of runs go, so nothing overtakes its aggregate;
 * their locks end with the claim's transaction.
 */
static void cut_to_size(batch *b)
{
    int *place = malloc(b->count * sizeof *place), *at_place = calloc(b->count, sizeof *at_place);
    group_by_aggregate(b);
    for (int k = 0; k < b->count; k++) {
        int i = b->by_aggregate[k];
        int same = k > 0 && same_aggregate(&b->rows[b->by_aggregate[k - 1]], &b->rows[i]);
        place[i] = same ? place[b->by_aggregate[k - 1]] + 1 : 0;
        at_place[place[i]]++;
    }
    int last = 0, room = b->size; /* keep every place before `last`, and `room` rows at it */
    while (room > at_place[last])
        room -= at_place[last++];
    int kept = 0;
    for (int i = 0; i < b->count; i++)
        if (place[i] < last || (place[i] == last && room-- > 0))
            b->rows[kept++] = b->rows[i];
    b->count = kept;
    free(place);
    free(at_place);
}

void batch_take(batch *b, PGresult *res)
{
    batch_clear(b);
    b->res = res;
    b->count = PQntuples(res);
    if (b->count > 2 * b->size) /* the claim's own limit: never */
        b->count = 2 * b->size;
    int all_due = 1;
    for (int i = 0; i < b->count; i++) {
        batch_row *r = &b->rows[i];
        r->res_row = i;
        r->id_text = PQgetvalue(res, i, ROW_ID);
        r->tid_text = PQgetisnull(res, i, ROW_TID) ? NULL : PQgetvalue(res, i, ROW_TID);
        r->id = strtoll(r->id_text, NULL, 10);
        r->event_id = PQgetvalue(res, i, ROW_EVENT_ID);
        r->aggregate_type = PQgetvalue(res, i, ROW_AGGREGATE_TYPE);
        r->aggregate_id = PQgetvalue(res, i, ROW_AGGREGATE_ID);
        r->attempt = (unsigned)strtoul(PQgetvalue(res, i, ROW_ATTEMPTS), NULL, 10) + 1;
        r->payload_bytes = PQgetisnull(res, i, ROW_PAYLOAD_BYTES)
                               ? -1
                               : strtoll(PQgetvalue(res, i, ROW_PAYLOAD_BYTES), NULL, 10);
        all_due &= is_due(res, i);
    }
    qsort(b->rows, b->count, sizeof *b->rows, by_id);
    if (!all_due)
        drop_not_due(b);
    if (b->count > b->size)
        cut_to_size(b);
}

void batch_after_failure(batch *b, const int *published, int *after)
{
    group_by_aggregate(b);
    int failed = 0;
    for (int k = 0; k < b->count; k++) {
        int i = b->by_aggregate[k];
        if (k > 0 && !same_aggregate(&b->rows[b->by_aggregate[k - 1]], &b->rows[i]))
            failed = 0;
        after[i] = failed;
        failed |= !published[i];
    }
}

/* A column's text, or NULL for SQL NULL. */
static const char *value(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

int batch_message(const batch *b, int i, const message_source *src, obx_message *msg,
                  obx_message_ext *ext, const cfg_route **route, char *err, size_t err_size)
{
    const PGresult *res = b->res;
    int row = b->rows[i].res_row;
    event_fields f = {
        .event_id = value(res, row, ROW_EVENT_ID),
        .aggregate_type = value(res, row, ROW_AGGREGATE_TYPE),
        .aggregate_id = value(res, row, ROW_AGGREGATE_ID),
        .event_type = value(res, row, ROW_EVENT_TYPE),
        .payload = value(res, row, ROW_PAYLOAD),
        .headers = value(res, row, ROW_HEADERS),
        .destination = value(res, row, ROW_DESTINATION),
        .payload_len = (size_t)PQgetlength(res, row, ROW_PAYLOAD),
        .created_at_us = strtoll(PQgetvalue(res, row, ROW_CREATED_US), NULL, 10),
        .attempt = b->rows[i].attempt,
        .aggregate_seq = PQgetisnull(res, row, ROW_AGGREGATE_SEQ)
                             ? 0
                             : strtoll(PQgetvalue(res, row, ROW_AGGREGATE_SEQ), NULL, 10),
        .event_version = value(res, row, ROW_EVENT_VERSION),
    };
    message_ext_build(&f, ext);
    return message_build(src, &f, msg, route, err, err_size);
}
