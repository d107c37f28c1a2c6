#include "event/event_row.h"

#include <stdlib.h>
#include <string.h>

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
long long event_parse_timestamp(const char *text)
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

event_row *event_row_new(const char *const *values, const size_t *lens)
{
    size_t size = sizeof(event_row);
    for (int f = 0; f < WF_COUNT; f++)
        size += values[f] ? lens[f] + 1 : 0;
    event_row *row = malloc(size);
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
    row->created_at_us = event_parse_timestamp(row->v[WF_CREATED_AT]);
    if (row->v[WF_AVAILABLE_AT])
        row->available_at_us = event_parse_timestamp(row->v[WF_AVAILABLE_AT]);
    return row;
}
