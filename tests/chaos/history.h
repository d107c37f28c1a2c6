/* history.h: the delivery history line every chaos consumer writes, before
 * it acknowledges the message:
 *   unix_ms <tab> event_id <tab> aggregate <tab> seq <tab> redelivered(0|1)
 * "seq" is read from the payload's "seq" (-1 when missing). */
#ifndef CHAOS_HISTORY_H
#define CHAOS_HISTORY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline long long history_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline long long history_seq(const void *payload, size_t len)
{
    char tmp[512];
    size_t n = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
    memcpy(tmp, payload, n);
    tmp[n] = '\0';
    const char *s = strstr(tmp, "\"seq\"");
    if (!s)
        return -1;
    s += 5;
    while (*s == ' ' || *s == ':')
        s++;
    return strtoll(s, NULL, 10);
}

/* Writes and flushes one line: on disk (page cache) before the ack. */
static inline void history_write(FILE *out, const char *event_id, const char *agg, long long seq,
                                 int redelivered)
{
    fprintf(out, "%lld\t%s\t%s\t%lld\t%d\n", history_now_ms(), event_id[0] ? event_id : "-",
            agg[0] ? agg : "-", seq, redelivered);
    fflush(out);
}

#endif
