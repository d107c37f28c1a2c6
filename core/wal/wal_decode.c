#include "wal/wal_decode.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US 946684800000000LL

/* A bounds-checked reader over one message; ok drops to 0 on overrun. */
typedef struct reader {
    const char *p;
    size_t len, pos;
    int ok;
} reader;

static const char *take(reader *r, size_t n)
{
    if (!r->ok || r->len - r->pos < n) {
        r->ok = 0;
        return NULL;
    }
    const char *at = r->p + r->pos;
    r->pos += n;
    return at;
}

static uint64_t read_int(reader *r, int bytes)
{
    const char *at = take(r, (size_t)bytes);
    uint64_t v = 0;
    for (int i = 0; at && i < bytes; i++)
        v = v << 8 | (unsigned char)at[i];
    return v;
}

/* A NUL-terminated string in place. */
static const char *read_str(reader *r)
{
    const char *start = r->p + r->pos;
    size_t n = r->ok ? strnlen(start, r->len - r->pos) : 0;
    if (!r->ok || n == r->len - r->pos) {
        r->ok = 0;
        return "";
    }
    r->pos += n + 1;
    return start;
}

void wal_decoder_init(wal_decoder *d, const relay_config *cfg, atomic_llong *ignored)
{
    memset(d, 0, sizeof *d);
    d->cfg = cfg;
    d->ignored = ignored;
    snprintf(d->prefix, sizeof d->prefix, "outbox-relay:%s.%s", cfg->schema, cfg->table);
}

/* Which field a column of the outbox table carries, or -1. */
static int field_of(const relay_config *cfg, const char *name)
{
    const char *names[WF_COUNT] = {
        cfg->col.event_id,      cfg->col.aggregate_type, cfg->col.aggregate_id, cfg->col.event_type,
        cfg->col.payload,       cfg->col.headers,        cfg->col.destination,  cfg->col.created_at,
        cfg->col.aggregate_seq, cfg->col.event_version,  cfg->col.available_at};
    for (int f = 0; f < WF_COUNT; f++)
        if (names[f] && strcmp(names[f], name) == 0)
            return f;
    return -1;
}

static void decode_relation(wal_decoder *d, reader *r)
{
    uint32_t relid = (uint32_t)read_int(r, 4);
    const char *nsp = read_str(r), *name = read_str(r);
    read_int(r, 1); /* replica identity */
    int ncols = (int)read_int(r, 2);
    int named = strcmp(nsp, d->cfg->schema) == 0 && strcmp(name, d->cfg->table) == 0;
    /* The publication holds the table itself, not its name: renamed, it is
     * still the outbox, and its columns (maybe changed too) must be mapped
     * again, never decoded with the old map. */
    int renamed = !named && d->have_relation && relid == d->relid;
    if (!r->ok || (!named && !renamed))
        return;
    if (renamed)
        log_warn("WAL: the outbox table (relation %u) is now named %s.%s, not %s.%s as configured; "
                 "its inserts are still relayed: set database.table and run init-db",
                 relid, nsp, name, d->cfg->schema, d->cfg->table);
    d->relid = relid;
    d->have_relation = 1;
    for (int f = 0; f < WF_COUNT; f++)
        d->column[f] = -1;
    for (int i = 0; i < ncols && r->ok; i++) {
        read_int(r, 1); /* flags */
        int f = field_of(d->cfg, read_str(r));
        read_int(r, 4); /* type oid */
        read_int(r, 4); /* typmod */
        if (f >= 0)
            d->column[f] = i;
    }
}

static event_row *decode_insert(wal_decoder *d, reader *r, char *err, size_t err_size)
{
    uint32_t relid = (uint32_t)read_int(r, 4);
    if (!d->have_relation || relid != d->relid)
        return NULL; /* another table of the publication */
    if (read_int(r, 1) != 'N') {
        r->ok = 0;
        return NULL;
    }
    int ncols = (int)read_int(r, 2);
    const char *values[WF_COUNT] = {0};
    size_t lens[WF_COUNT] = {0};
    for (int i = 0; i < ncols && r->ok; i++) {
        char kind = (char)read_int(r, 1);
        const char *value = NULL;
        size_t n = 0;
        if (kind == 't') {
            n = (size_t)read_int(r, 4);
            value = take(r, n);
        } else if (kind != 'n' && kind != 'u') {
            snprintf(err, err_size, "pgoutput: unknown tuple column kind 0x%02x",
                     (unsigned char)kind);
            r->ok = 0;
            return NULL;
        }
        for (int f = 0; f < WF_COUNT; f++)
            if (d->column[f] == i)
                values[f] = value, lens[f] = n;
    }
    return r->ok ? event_row_new(values, lens) : NULL;
}

/* A message with the relay's prefix while they are not accepted: anyone who
 * can connect can send one, so it is never an event. Logged at the 1st,
 * 2nd, 4th, 8th... so that a flood cannot flood the log; all are counted. */
static void ignore_message(wal_decoder *d, uint64_t lsn, size_t n)
{
    long long k = atomic_fetch_add(d->ignored, 1) + 1;
    if ((k & (k - 1)) == 0)
        log_warn("WAL: ignored a logical message with the relay's prefix at %X/%X (%zu bytes; "
                 "%lld so far): pg_logical_emit_message is open to every role, so such messages "
                 "are events only with relay.wal.accept_logical_messages = true",
                 (unsigned)(lsn >> 32), (unsigned)lsn, n, k);
}

/* An accepted message that is not a JSON object (not JSON, not UTF-8 in a
 * SQL_ASCII database...): an event that cannot be one, its content kept as
 * bytea's hex text in the payload, so the dead letter holds every byte. */
static event_row *unreadable_message(const char *content, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char *text = malloc(2 * n + 3);
    text[0] = '\\', text[1] = 'x';
    for (size_t k = 0; k < n; k++) {
        text[2 + 2 * k] = hex[(unsigned char)content[k] >> 4];
        text[3 + 2 * k] = hex[(unsigned char)content[k] & 15];
    }
    text[2 + 2 * n] = '\0';
    const char *values[WF_COUNT] = {[WF_PAYLOAD] = text};
    size_t lens[WF_COUNT] = {[WF_PAYLOAD] = 2 * n + 2};
    event_row *row = event_row_new(values, lens);
    free(text);
    row->invalid = "the logical message is not a JSON object (its bytes are the payload, as hex)";
    return row;
}

/* A logical message's JSON object (what outbox_emit sent before it inserted)
 * as a row (created_at rendered from its microseconds). */
static event_row *decode_message(wal_decoder *d, reader *r)
{
    uint64_t lsn = read_int(r, 8);
    const char *prefix = read_str(r);
    size_t n = (size_t)read_int(r, 4);
    const char *content = take(r, n);
    if (!r->ok || strcmp(prefix, d->prefix) != 0)
        return NULL;
    if (!d->cfg->wal_accept_logical_messages) {
        ignore_message(d, lsn, n);
        return NULL;
    }
    json_t *o = json_loadb(content, n, 0, NULL);
    if (!json_is_object(o)) { /* never dropped: dead-lettered with its bytes */
        json_decref(o);
        return unreadable_message(content, n);
    }
    static const char *const keys[WF_COUNT] = {
        "event_id", "aggregate_type", "aggregate_id", "event_type", "payload",
        "headers",  "destination",    NULL,           NULL,         "event_version"};
    const char *values[WF_COUNT] = {0};
    size_t lens[WF_COUNT] = {0};
    for (int f = 0; f < WF_COUNT; f++) {
        json_t *v = keys[f] ? json_object_get(o, keys[f]) : NULL;
        if (json_is_string(v))
            values[f] = json_string_value(v), lens[f] = json_string_length(v);
    }
    char seq[24]; /* a number, as the column's text would be */
    json_t *s = json_object_get(o, "aggregate_seq");
    if (json_is_integer(s)) {
        snprintf(seq, sizeof seq, "%lld", (long long)json_integer_value(s));
        values[WF_AGGREGATE_SEQ] = seq, lens[WF_AGGREGATE_SEQ] = strlen(seq);
    }
    long long us = (long long)json_integer_value(json_object_get(o, "created_at_us"));
    char stamp[64];
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t at = strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(stamp + at, sizeof stamp - at, ".%06lld+00", us % 1000000);
    values[WF_CREATED_AT] = stamp;
    lens[WF_CREATED_AT] = strlen(stamp);
    event_row *row = event_row_new(values, lens);
    json_decref(o);
    return row;
}

int wal_decode(wal_decoder *d, const char *data, size_t len, wal_change *out, char *err,
               size_t err_size)
{
    reader r = {data, len, 0, 1};
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    char type = (char)read_int(&r, 1);
    switch (type) {
    case 'B': /* final LSN, commit time, xid */
        read_int(&r, 8);
        /* a time past what a long long holds in Unix microseconds: 0 (unknown) */
        if (__builtin_add_overflow((int64_t)read_int(&r, 8), PG_EPOCH_OFFSET_US, &out->commit_us))
            out->commit_us = 0;
        read_int(&r, 4);
        out->kind = WAL_BEGIN;
        break;
    case 'C': /* flags, commit LSN, end LSN, time */
        read_int(&r, 1);
        read_int(&r, 8);
        out->lsn = read_int(&r, 8);
        out->kind = WAL_COMMIT;
        break;
    case 'R': decode_relation(d, &r); break;
    case 'I':
        out->row = decode_insert(d, &r, err, err_size);
        out->kind = out->row ? WAL_EVENT : WAL_NONE;
        break;
    case 'M':
        /* only transactional messages: they sit between Begin and Commit */
        if (read_int(&r, 1) & 1) {
            out->row = decode_message(d, &r);
            out->kind = out->row ? WAL_EVENT : WAL_NONE;
        }
        break;
    default: break; /* Update, Delete, Truncate, Type, Origin: not events */
    }
    if (!r.ok) {
        if (!err[0])
            snprintf(err, err_size, "pgoutput: message '%c' of %zu bytes is cut short", type, len);
        return -1;
    }
    return 0;
}
