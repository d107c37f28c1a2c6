/*
 * WAL mode's pure parts, without a server: pgoutput messages built byte by
 * byte through the decoder (Begin, Relation, Insert, Commit, Message, the
 * ignored rest, a message cut short), and the window's decisions: what may
 * be sent per aggregate, retries in place, and the confirmable commit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wal/wal_decode.h"
#include "window/window.h"

typedef struct buf {
    char b[4096];
    size_t n;
} buf;

static void put(buf *m, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        m->b[m->n++] = (char)(v >> (8 * i));
}
static void put_str(buf *m, const char *s)
{
    size_t len = strlen(s) + 1;
    memcpy(m->b + m->n, s, len);
    m->n += len;
}

static relay_config cfg;
static atomic_llong ignored_count; /* the decoder's count of ignored messages */
static const char *const columns[] = {"id",          "event_id", "aggregate_type", "aggregate_id",
                                      "event_type",  "payload",  "headers",        "destination",
                                      "created_at",  "attempts", "aggregate_seq",  "event_version",
                                      "available_at"};
#define NCOLS 13

static int setup(void **state)
{
    (void)state;
    cfg.schema = "public";
    cfg.table = "outbox";
    cfg.col.id = "id", cfg.col.event_id = "event_id", cfg.col.aggregate_type = "aggregate_type";
    cfg.col.aggregate_id = "aggregate_id", cfg.col.event_type = "event_type";
    cfg.col.payload = "payload", cfg.col.headers = "headers", cfg.col.destination = "destination";
    cfg.col.created_at = "created_at", cfg.col.aggregate_seq = "aggregate_seq";
    cfg.col.event_version = "event_version", cfg.col.available_at = "available_at";
    return 0;
}

/* A Relation message; names: its columns (NULL: columns[], in order). */
static buf relation_of(uint32_t relid, const char *table, const char *const *names)
{
    buf m = {.n = 0};
    put(&m, 'R', 1);
    put(&m, relid, 4);
    put_str(&m, "public");
    put_str(&m, table);
    put(&m, 'd', 1);
    put(&m, NCOLS, 2);
    for (int i = 0; i < NCOLS; i++) {
        put(&m, 0, 1);
        put_str(&m, names ? names[i] : columns[i]);
        put(&m, 25, 4);
        put(&m, (uint32_t)-1, 4);
    }
    return m;
}

static buf relation(uint32_t relid, const char *table)
{
    return relation_of(relid, table, NULL);
}

/* An insert: id, event_id, aggregate 'Order'/agg, type, payload, headers NULL, destination NULL,
 * created_at, attempts unchanged-toast, aggregate_seq, event_version, available_at. */
static buf insert(uint32_t relid, const char *agg)
{
    const char *values[] = {"7",
                            "11111111-2222-3333-4444-555555555555",
                            "Order",
                            agg,
                            "order.paid",
                            "{\"n\": 1}",
                            NULL,
                            NULL,
                            "2026-12-01 15:12:22.5+00",
                            NULL, /* attempts: unchanged-toast, below */
                            "3",
                            "v2",
                            "2026-12-01 15:12:25+00"};
    buf m = {.n = 0};
    put(&m, 'I', 1);
    put(&m, relid, 4);
    put(&m, 'N', 1);
    put(&m, NCOLS, 2);
    for (int i = 0; i < NCOLS; i++) {
        if (i == 9) {
            put(&m, 'u', 1);
            continue;
        }
        if (!values[i]) {
            put(&m, 'n', 1);
            continue;
        }
        put(&m, 't', 1);
        put(&m, strlen(values[i]), 4);
        memcpy(m.b + m.n, values[i], strlen(values[i]));
        m.n += strlen(values[i]);
    }
    return m;
}

static void test_decode_transaction(void **state)
{
    (void)state;
    wal_decoder d;
    wal_decoder_init(&d, &cfg, &ignored_count);
    wal_change c;
    char err[256];
    buf m = {.n = 0};
    put(&m, 'B', 1);
    put(&m, 0x1000, 8);
    put(&m, 0, 8); /* 2000-01-01 */
    put(&m, 42, 4);
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_BEGIN);
    assert_int_equal(c.commit_us, 946684800000000LL);
    /* a commit time past a long long of Unix microseconds: 0, no overflow */
    m.n = 0;
    put(&m, 'B', 1);
    put(&m, 0x1000, 8);
    put(&m, 0x7fffffffffffffffULL, 8);
    put(&m, 42, 4);
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.commit_us, 0);

    m = relation(5, "other"); /* another table: its inserts are not events */
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    m = insert(5, "x");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_NONE);

    m = relation(9, "outbox");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    m = insert(9, "agg-1");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_EVENT);
    assert_string_equal(c.row->v[WF_EVENT_ID], "11111111-2222-3333-4444-555555555555");
    assert_string_equal(c.row->v[WF_AGGREGATE_ID], "agg-1");
    assert_string_equal(c.row->v[WF_PAYLOAD], "{\"n\": 1}");
    assert_int_equal(c.row->len[WF_PAYLOAD], 8);
    assert_null(c.row->v[WF_HEADERS]);
    assert_string_equal(c.row->v[WF_AGGREGATE_SEQ], "3");
    assert_string_equal(c.row->v[WF_EVENT_VERSION], "v2");
    assert_int_equal(c.row->available_at_us - c.row->created_at_us, 2500000);
    assert_int_equal(c.row->created_at_us, 1796137942500000LL);
    free(c.row);

    m.n = 0; /* an Update: not an event */
    put(&m, 'U', 1);
    put(&m, 9, 4);
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_NONE);

    m.n = 0;
    put(&m, 'C', 1);
    put(&m, 0, 1);
    put(&m, 0x1000, 8);
    put(&m, 0x1080, 8);
    put(&m, 0, 8);
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_COMMIT);
    assert_int_equal(c.lsn, 0x1080);

    m = insert(9, "agg-1"); /* cut short */
    assert_int_equal(wal_decode(&d, m.b, m.n - 5, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "cut short"));
}

/* The outbox renamed, its payload and headers columns swapped: the new
 * Relation message maps the columns again (a stale map would take the
 * payload from the headers' place). Another table never takes its place. */
static void test_decode_renamed(void **state)
{
    (void)state;
    static const char *const swapped[NCOLS] = {"id",           "event_id",      "aggregate_type",
                                               "aggregate_id", "event_type",    "headers",
                                               "payload",      "destination",   "created_at",
                                               "attempts",     "aggregate_seq", "event_version",
                                               "available_at"};
    wal_decoder d;
    wal_decoder_init(&d, &cfg, &ignored_count);
    wal_change c;
    char err[256];
    buf m = relation(9, "outbox");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    m = relation_of(9, "outbox_renamed", swapped);
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    m = insert(9, "agg-1");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_EVENT);
    assert_null(c.row->v[WF_PAYLOAD]); /* the 7th column, NULL in this insert */
    assert_string_equal(c.row->v[WF_HEADERS], "{\"n\": 1}");
    free(c.row);
    m = relation(12, "another");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    m = insert(12, "agg-2");
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_NONE);
}

static void test_decode_message(void **state)
{
    (void)state;
    wal_decoder d;
    wal_decoder_init(&d, &cfg, &ignored_count);
    const char *json =
        "{\"event_id\": \"e1\", \"aggregate_type\": \"Order\", \"aggregate_id\": \"a\","
        " \"event_type\": \"t\", \"payload\": \"{\\\"x\\\": 1}\", \"headers\": null,"
        " \"destination\": null, \"created_at_us\": 1796137942500001}";
    /* the relay's prefix while messages are not accepted (the default), then
     * accepted; another prefix: never an event */
    const char *prefixes[] = {"outbox-relay:public.outbox", "outbox-relay:public.outbox",
                              "someone-else"};
    long long ignored = atomic_load(&ignored_count);
    for (int i = 0; i < 3; i++) {
        cfg.wal_accept_logical_messages = i > 0;
        buf m = {.n = 0};
        put(&m, 'M', 1);
        put(&m, 1, 1); /* transactional */
        put(&m, 0x2000, 8);
        put_str(&m, prefixes[i]);
        put(&m, strlen(json), 4);
        memcpy(m.b + m.n, json, strlen(json));
        m.n += strlen(json);
        wal_change c;
        char err[256];
        assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
        if (i != 1) {
            assert_int_equal(c.kind, WAL_NONE);
            assert_int_equal(atomic_load(&ignored_count), ignored + 1);
            continue;
        }
        assert_int_equal(c.kind, WAL_EVENT);
        assert_string_equal(c.row->v[WF_PAYLOAD], "{\"x\": 1}");
        assert_string_equal(c.row->v[WF_CREATED_AT], "2026-12-01 15:12:22.500001+00");
        assert_int_equal(c.row->created_at_us, 1796137942500001LL);
        assert_null(c.row->invalid);
        free(c.row);
    }
    /* accepted, but not a JSON object (here not UTF-8 either): an event that
     * cannot be one, never dropped, its bytes kept as hex in the payload */
    cfg.wal_accept_logical_messages = 1;
    const char bad[] = "no\xff{";
    buf m = {.n = 0};
    put(&m, 'M', 1);
    put(&m, 1, 1);
    put(&m, 0x2100, 8);
    put_str(&m, "outbox-relay:public.outbox");
    put(&m, sizeof bad - 1, 4);
    memcpy(m.b + m.n, bad, sizeof bad - 1);
    m.n += sizeof bad - 1;
    wal_change c;
    char err[256];
    assert_int_equal(wal_decode(&d, m.b, m.n, &c, err, sizeof err), 0);
    assert_int_equal(c.kind, WAL_EVENT);
    assert_non_null(c.row->invalid);
    assert_string_equal(c.row->v[WF_PAYLOAD], "\\x6e6fff7b");
    assert_null(c.row->v[WF_EVENT_ID]);
    free(c.row);
    cfg.wal_accept_logical_messages = 0;
}

static event_row *row_of(const char *agg)
{
    event_row *r = calloc(1, sizeof *r + 16);
    char *at = (char *)(r + 1);
    strcpy(at, "Order");
    strcpy(at + 6, agg);
    r->v[WF_AGGREGATE_TYPE] = at;
    r->v[WF_AGGREGATE_ID] = at + 6;
    return r;
}

static void test_window_order_and_confirm(void **state)
{
    (void)state;
    window w;
    window_init(&w, 1);
    window_begin(&w, 1);
    window_add(&w, row_of("a"));
    window_add(&w, row_of("a"));
    window_add(&w, row_of("b"));
    window_commit(&w, 0x100);
    window_begin(&w, 2);
    window_add(&w, row_of("b"));
    window_commit(&w, 0x200);

    window_event *a1 = window_next(&w, 0), *b1 = window_next(&w, 0);
    assert_int_equal(a1->seq, 0);
    assert_int_equal(b1->seq, 2);
    assert_null(window_next(&w, 0)); /* a2 and b2 wait for their predecessors */
    window_retry(&w, a1, 50);        /* a1 failed: retried in place, a2 still waits */
    assert_null(window_next(&w, 10));
    assert_ptr_equal(window_next(&w, 50), a1);
    window_finish(&w, b1);
    window_event *b2 = window_next(&w, 50);
    assert_int_equal(b2->seq, 3);
    window_finish(&w, b2);
    assert_int_equal(window_confirm(&w), 0); /* the first transaction is not finished */
    window_finish(&w, a1);
    window_event *a2 = window_next(&w, 50);
    assert_int_equal(a2->seq, 1);
    assert_ptr_equal(window_find(&w, 1), a2);
    window_finish(&w, a2);
    assert_int_equal(window_confirm(&w), 0x200); /* both, in one step */
    assert_true(window_empty(&w));
    assert_null(window_find(&w, 1));
    window_free(&w);
}

/* A head being dead-lettered has handed its row to the writer (row NULL)
 * until the write is done: a later event of its aggregate that arrives
 * meanwhile waits behind it, found by the aggregate's own key (reading the
 * head's row was a NULL dereference, wal_replay under ASan). */
static void test_window_head_without_row(void **state)
{
    (void)state;
    window w;
    window_init(&w, 1);
    window_begin(&w, 1);
    window_add(&w, row_of("a"));
    window_commit(&w, 0x100);
    window_event *a1 = window_next(&w, 0);
    free(a1->row); /* the dead-letter writer's now (window_publish.c dead_letter) */
    a1->row = NULL;
    window_begin(&w, 2);
    window_add(&w, row_of("a"));
    window_add(&w, row_of("b"));
    window_commit(&w, 0x200);
    window_event *b1 = window_next(&w, 0);
    assert_int_equal(b1->seq, 2); /* a2 waits behind a1 */
    assert_null(window_next(&w, 0));
    window_finish(&w, a1); /* written: buried */
    assert_int_equal(window_next(&w, 0)->seq, 1);
    window_free(&w);
}

static void test_window_unordered(void **state)
{
    (void)state;
    window w;
    window_init(&w, 0);
    window_begin(&w, 1);
    for (int i = 0; i < 3000; i++) /* past the ring's first size */
        window_add(&w, row_of("a"));
    int n = 0;
    window_event *ev;
    while ((ev = window_next(&w, 0))) {
        assert_int_equal(ev->seq, n++);
        window_finish(&w, ev);
    }
    assert_int_equal(n, 3000);
    assert_int_equal(window_confirm(&w), 0); /* not committed yet */
    window_commit(&w, 0x300);
    assert_int_equal(window_confirm(&w), 0x300);
    window_free(&w);
}

static void test_timestamps(void **state)
{
    (void)state;
    assert_int_equal(event_parse_timestamp("1970-01-01 00:00:01+00"), 1000000);
    assert_int_equal(event_parse_timestamp("1970-01-01 01:00:00.25+01"), 250000);
    assert_int_equal(event_parse_timestamp("1970-01-01 00:00:00-05:30"), 19800000000LL);
    assert_int_equal(event_parse_timestamp("infinity"), 0);
    assert_int_equal(event_parse_timestamp(NULL), 0);
    assert_int_equal(event_parse_timestamp("2026-13-01 00:00:00+00"), 0);
    /* as timegm has them: leap days, the 2000s, before 1970, seconds in the offset */
    assert_int_equal(event_parse_timestamp("2024-02-29 23:59:59.999999+00"), 1709251199999999LL);
    assert_int_equal(event_parse_timestamp("2026-12-01 15:12:22.123456+00"), 1796137942123456LL);
    assert_int_equal(event_parse_timestamp("1969-12-31 23:00:00+00"), -3600000000LL);
    assert_int_equal(event_parse_timestamp("1900-01-01 00:00:00+00:19:32"), -2208989972000000LL);
    assert_int_equal(event_parse_timestamp("12026-01-01 00:00:00+00"), 317336745600000000LL);
    /* past a long long of microseconds (PostgreSQL's last year is 294276): 0, no overflow */
    assert_int_equal(event_parse_timestamp("294276-12-31 23:59:59.999999+00"), 0);
    assert_int_equal(event_parse_timestamp("999999999-12-31 23:59:59.999999-15:59:59"), 0);
    assert_int_equal(event_parse_timestamp("294247-01-10 04:00:54.775807+00"), 9223372036854775807LL);
    assert_int_equal(event_parse_timestamp("294247-01-10 04:00:54.775807-01"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_transaction),
        cmocka_unit_test(test_decode_renamed),
        cmocka_unit_test(test_decode_message),
        cmocka_unit_test(test_window_order_and_confirm),
        cmocka_unit_test(test_window_unordered),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_window_head_without_row),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
