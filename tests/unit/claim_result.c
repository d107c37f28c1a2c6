#include "claim_result.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* Names as the claim statement returns them (for readable failures only). */
static const char *const column_names[CLAIM_COLUMNS] = {
    [ROW_ID] = "id",
    [ROW_EVENT_ID] = "event_id",
    [ROW_AGGREGATE_TYPE] = "aggregate_type",
    [ROW_AGGREGATE_ID] = "aggregate_id",
    [ROW_EVENT_TYPE] = "event_type",
    [ROW_PAYLOAD] = "payload",
    [ROW_HEADERS] = "headers",
    [ROW_DESTINATION] = "destination",
    [ROW_CREATED_US] = "created_us",
    [ROW_ATTEMPTS] = "attempts",
    [ROW_PAYLOAD_BYTES] = "payload_bytes",
    [ROW_TID] = "tid",
    [ROW_AFTER_TYPE] = "after_type",
    [ROW_AFTER_ID] = "after_id",
    [ROW_HEADS] = "heads",
    [ROW_DUE] = "due",
};

claim_row claim_row_of(const char *id, const char *type, const char *agg_id, const char *event_type)
{
    claim_row r = {{NULL}};
    r.v[ROW_ID] = id;
    r.v[ROW_EVENT_ID] = id; /* unique enough for a test */
    r.v[ROW_AGGREGATE_TYPE] = type;
    r.v[ROW_AGGREGATE_ID] = agg_id;
    r.v[ROW_EVENT_TYPE] = event_type;
    r.v[ROW_PAYLOAD] = "{}";
    r.v[ROW_CREATED_US] = "1700000000000000";
    r.v[ROW_ATTEMPTS] = "0";
    return r;
}

PGresult *claim_result(const claim_row *rows, int count)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    assert_non_null(res);
    PGresAttDesc attrs[CLAIM_COLUMNS];
    memset(attrs, 0, sizeof attrs);
    for (int c = 0; c < CLAIM_COLUMNS; c++) {
        attrs[c].name = (char *)column_names[c];
        attrs[c].typid = 25; /* text */
        attrs[c].typlen = -1;
        attrs[c].atttypmod = -1;
    }
    assert_true(PQsetResultAttrs(res, CLAIM_COLUMNS, attrs));
    for (int i = 0; i < count; i++)
        for (int c = 0; c < CLAIM_COLUMNS; c++) {
            const char *v = rows[i].v[c];
            assert_true(PQsetvalue(res, i, c, (char *)v, v ? (int)strlen(v) : -1));
        }
    return res;
}
