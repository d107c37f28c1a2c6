/*
 * Small helpers every driver needs, header-only so a driver still links
 * nothing of the relay. C99, standard headers only.
 */
#ifndef OBX_DRIVER_UTIL_H
#define OBX_DRIVER_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obx/driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes a message's created_at_us as ISO 8601 UTC with microseconds,
 * "2024-05-01T12:34:56.123456Z" (28 bytes with the NUL), into buf. Pure
 * integer arithmetic on the proleptic Gregorian calendar: no locale, no
 * time zone, any thread.
 */
static inline void obx_format_time(int64_t us, char *buf, size_t size)
{
    int64_t secs = us / 1000000, micros = us % 1000000;
    if (micros < 0) {
        micros += 1000000;
        secs--;
    }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    /* days since 0000-03-01, in 400-year eras of 146,097 days */
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;                                   /* day of era */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* year of era */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* day of year from March */
    int64_t mp = (5 * doy + 2) / 153;                      /* month from March */
    int64_t day = doy - (153 * mp + 2) / 5 + 1;
    int64_t month = mp < 10 ? mp + 3 : mp - 9;
    int64_t year = yoe + era * 400 + (month <= 2);
    char text[160]; /* room for any int64 in every field: never truncated here */
    size_t len;
    if (year >= 0 && year <= 9999) { /* the usual case, digit by digit (printf costs more) */
        static const char pattern[] = "0000-00-00T00:00:00.000000Z";
        const int64_t value[7] = {year, month, day, sod / 3600, sod / 60 % 60, sod % 60, micros};
        static const unsigned char end[7] = {4, 7, 10, 13, 16, 19, 26}; /* after the last digit */
        static const unsigned char width[7] = {4, 2, 2, 2, 2, 2, 6};
        memcpy(text, pattern, sizeof pattern);
        for (int f = 0; f < 7; f++)
            for (int64_t v = value[f], d = 1; d <= width[f]; d++, v /= 10)
                text[end[f] - d] = (char)('0' + v % 10);
        len = sizeof pattern - 1;
    } else {
        int n = snprintf(text, sizeof text, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ",
                         (long long)year, (long long)month, (long long)day, (long long)(sod / 3600),
                         (long long)(sod / 60 % 60), (long long)(sod % 60), (long long)micros);
        len = n < 0 ? 0 : (size_t)n;
    }
    if (size == 0)
        return;
    if (len >= size)
        len = size - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
}

/**
 * A 64-bit hash (FNV-1a) of a message's aggregate (type and id, kept apart:
 * "ab"/"c" differs from "a"/"bc"), for drivers that track order per
 * aggregate. Equal aggregates hash equal; a collision only makes a driver
 * treat two aggregates as one.
 */
static inline uint64_t obx_aggregate_hash(const obx_message *m)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[2] = {m->aggregate_type, m->aggregate_id};
    for (int i = 0; i < 2; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; p && *p; p++)
            h = (h ^ *p) * 1099511628211ull;
        h = (h ^ 0xffu) * 1099511628211ull;
    }
    return h;
}

/**
 * The aggregates (obx_aggregate_hash) with a refused message in the batch
 * being published: a driver that keeps order (OBX_DRIVER_IN_ORDER) refuses
 * their later messages too, so none goes out ahead of an earlier one.
 * Zero-initialised; obx_held_clear at each batch, obx_held_free at the end.
 */
typedef struct obx_held {
    uint64_t *hash;
    size_t count, cap;
} obx_held;

static inline int obx_held_has(const obx_held *h, uint64_t aggregate)
{
    for (size_t i = 0; i < h->count; i++)
        if (h->hash[i] == aggregate)
            return 1;
    return 0;
}

/** Returns 0, or -1 when out of memory (nothing added). */
static inline int obx_held_add(obx_held *h, uint64_t aggregate)
{
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        uint64_t *grown = (uint64_t *)realloc(h->hash, cap * sizeof *grown);
        if (!grown)
            return -1;
        h->hash = grown;
        h->cap = cap;
    }
    h->hash[h->count++] = aggregate;
    return 0;
}

static inline void obx_held_clear(obx_held *h)
{
    h->count = 0;
}

static inline void obx_held_free(obx_held *h)
{
    free(h->hash);
    h->hash = NULL;
    h->count = h->cap = 0;
}

#ifdef __cplusplus
}
#endif

#endif /* OBX_DRIVER_UTIL_H */
