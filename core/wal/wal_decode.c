#include "wal_decode.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

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

/* Exactly n digits at *p, advancing it; -1 when they are not there. */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Read by hand, once per event: sscanf and timegm cost more than the rest of
 * the decoding together. Past what microseconds in a long long hold (year
 * 294247 on), 0 like any unreadable text: checked, never overflowed. */
long long wal_parse_timestamp(const char *text)
{
    const char *p = text;
    if (!p)
        return 0;
    long long year = digits(&p, 4);
    while (year >= 0 && year < 100000000 && *p >= '0' && *p <= '9') /* past 9999 */
        year = year * 10 + (*p++ - '0');
    int mon = *p == '-' ? (p++, digits(&p, 2)) : -1;
    int day = *p == '-' ? (p++, digits(&p, 2)) : -1;
    int hour = *p == ' ' ? (p++, digits(&p, 2)) : -1;
    int min = *p == ':' ? (p++, digits(&p, 2)) : -1;
    int sec = *p == ':' ? (p++, digits(&p, 2)) : -1;
    if (year < 0 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 || min < 0 || sec < 0)
        return 0;
    long long us, secs = ((days_from_civil(year, mon, day) * 24 + hour) * 60 + min) * 60 + sec;
    if (__builtin_mul_overflow(secs, 1000000LL, &us))
        return 0;
    if (*p == '.') {
        long long frac = 0, scale = 100000;
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
        if (__builtin_add_overflow(us, frac, &us))
            return 0;
    }
    if (*p == '+' || *p == '-') { /* +HH, +HH:MM or +HH:MM:SS */
        int sign = *p++ == '-' ? -1 : 1, part[3] = {0, 0, 0};
        for (int i = 0; i < 3 && (i == 0 || (*p == ':' && p++)); i++)
            if ((part[i] = digits(&p, 2)) < 0)
                return 0;
        long long offset = sign * ((long long)part[0] * 3600 + part[1] * 60 + part[2]) * 1000000;
        if (__builtin_sub_overflow(us, offset, &us))
            return 0;
    }
    return us;
}

void wal_decoder_init(wal_decoder *d, const relay_config *cfg)
{
    memset(d, 0, sizeof *d);
    d->cfg = cfg;
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

wal_row *wal_row_new(const char *const *values, const size_t *lens)
{
    size_t size = sizeof(wal_row);
    for (int f = 0; f < WF_COUNT; f++)
        size += values[f] ? lens[f] + 1 : 0;
    wal_row *row = malloc(size);
    memset(row, 0, sizeof *row); /* the values are copied over the rest */
    row->size = size;
    char *at = (char *)(row + 1);
    for (int f = 0; f < WF_COUNT; f++) {
        if (!values[f])
            continue;
        memcpy(at, values[f], lens[f]);
        at[lens[f]] = '\0';
        row->v[f] = at;
        row->len[f] = lens[f];
        at += lens[f] + 1;
    }
    row->created_at_us = wal_parse_timestamp(row->v[WF_CREATED_AT]);
    if (row->v[WF_AVAILABLE_AT])
        row->available_at_us = wal_parse_timestamp(row->v[WF_AVAILABLE_AT]);
    return row;
}

static wal_row *decode_insert(wal_decoder *d, reader *r, char *err, size_t err_size)
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
    return r->ok ? wal_row_new(values, lens) : NULL;
}

static atomic_llong ignored_messages;

long long wal_ignored_messages(void)
{
    return atomic_load(&ignored_messages);
}

/* A message with the relay's prefix while they are not accepted: anyone who
 * can connect can send one, so it is never an event. Logged at the 1st,
 * 2nd, 4th, 8th... so that a flood cannot flood the log; all are counted. */
static void ignore_message(uint64_t lsn, size_t n)
{
    long long k = atomic_fetch_add(&ignored_messages, 1) + 1;
    if ((k & (k - 1)) == 0)
        log_warn("WAL: ignored a logical message with the relay's prefix at %X/%X (%zu bytes; "
                 "%lld so far): pg_logical_emit_message is open to every role, so such messages "
                 "are events only with relay.wal.accept_logical_messages = true",
                 (unsigned)(lsn >> 32), (unsigned)lsn, n, k);
}

/* An accepted message that is not a JSON object (not JSON, not UTF-8 in a
 * SQL_ASCII database...): an event that cannot be one, its content kept as
 * bytea's hex text in the payload, so the dead letter holds every byte. */
static wal_row *unreadable_message(const char *content, size_t n)
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
    wal_row *row = wal_row_new(values, lens);
    free(text);
    row->invalid = "the logical message is not a JSON object (its bytes are the payload, as hex)";
    return row;
}

/* A logical message's JSON object (what outbox_emit sent before it inserted)
 * as a row (created_at rendered from its microseconds). */
static wal_row *decode_message(wal_decoder *d, reader *r)
{
    uint64_t lsn = read_int(r, 8);
    const char *prefix = read_str(r);
    size_t n = (size_t)read_int(r, 4);
    const char *content = take(r, n);
    if (!r->ok || strcmp(prefix, d->prefix) != 0)
        return NULL;
    if (!d->cfg->wal_accept_logical_messages) {
        ignore_message(lsn, n);
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
    wal_row *row = wal_row_new(values, lens);
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
