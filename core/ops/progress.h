/* Progress of a backlog's drain, for the log (issue 49, item 4): a long
 * drain said nothing for minutes. The backlog poller (backlog.c) gives each
 * poll's sample of (time, what is pending, events finished so far) to
 * progress_sample, which decides, without a database, what line to log: one
 * per PROGRESS_INTERVAL_MS while a real backlog lasts (at least
 * PROGRESS_MIN_EVENTS pending, or pending with nothing finished and not
 * shrinking), then one when it has drained; none when idle or with a small
 * steady flow. */
#ifndef OBX_PROGRESS_H
#define OBX_PROGRESS_H

#include <stddef.h>

#define PROGRESS_INTERVAL_MS 10000
#define PROGRESS_MIN_EVENTS 1000
/* WAL mode counts its backlog as the WAL its slot holds (events in it are
 * not counted without decoding them). */
#define PROGRESS_MIN_BYTES (1024 * 1024)

typedef struct progress {
    int bytes;   /* pending is bytes of WAL, not events (set once, before the first sample) */
    int sampled; /* the interval below has begun */
    int seen;    /* a backlog is on, since since_ms */
    int logged;  /* a line about it was logged: the drained line is owed */
    long long at_ms, pending, done; /* the interval's first sample */
    int had_prev;                   /* prev_ms and prev_done are set */
    long long prev_ms, prev_done;   /* the sample before (its pending known or not) */
    long long since_ms, since_done; /* where the backlog began */
} progress;

/* One sample: now (monotonic ms), pending (events, or bytes; negative: not
 * known yet, the sample is skipped), done (events
 * finished, published or dead, since the relay started; it never goes
 * down). Writes the line to log (without the level) into line and returns 1,
 * or returns 0 with nothing to say. name: the outbox, as "public.outbox". */
int progress_sample(progress *p, const char *name, long long now, long long pending, long long done,
                    char *line, size_t line_size);

/* "1,234,567" and "3 min 13 s", as the lines write them. */
void progress_count(char *out, size_t out_size, long long n);
void progress_duration(char *out, size_t out_size, long long ms);

#endif
