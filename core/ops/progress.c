#include "ops/progress.h"

#include <stdio.h>

void progress_count(char *out, size_t out_size, long long n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", n < 0 ? -n : n);
    size_t o = 0;
    if (n < 0 && o + 1 < out_size)
        out[o++] = '-';
    for (int i = 0; i < len && o + 1 < out_size; i++) {
        if (i > 0 && (len - i) % 3 == 0 && o + 2 < out_size)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    if (out_size)
        out[o] = '\0';
}

void progress_duration(char *out, size_t out_size, long long ms)
{
    long long s = (ms + 500) / 1000;
    if (s < 60)
        snprintf(out, out_size, "%lld s", s);
    else if (s < 3600)
        snprintf(out, out_size, "%lld min %lld s", s / 60, s % 60);
    else
        snprintf(out, out_size, "%lld h %lld min", s / 3600, s % 3600 / 60);
}

/* "812,345" events, or "41 MB" / "512 kB" of WAL. */
static void amount(const progress *p, long long pending, char *out, size_t out_size)
{
    char n[32];
    if (!p->bytes) {
        progress_count(out, out_size, pending);
        return;
    }
    int mb = pending >= 1024 * 1024;
    progress_count(n, sizeof n, mb ? pending >> 20 : pending >> 10);
    snprintf(out, out_size, "%s %s of WAL", n, mb ? "MB" : "kB");
}

/* The line at an interval's end, if it is worth one. */
static int interval_line(progress *p, const char *name, long long now, long long pending,
                         long long done, long long min, int waiting, char *line, size_t line_size)
{
    long long dt = now - p->at_ms, shrunk = p->pending - pending;
    int stuck = shrunk <= 0 && pending > 0 && (pending >= min || waiting);
    if (pending < min && !stuck) /* idle, or a small flow that keeps up */
        return 0;
    if (!p->seen) { /* a few stuck events */
        p->seen = 1;
        p->since_ms = p->at_ms;
        p->since_done = p->done;
    }
    p->logged = 1;
    char what[48], rate[32], left[48];
    amount(p, pending, what, sizeof what);
    progress_count(rate, sizeof rate, (done - p->done) * 1000 / dt);
    if (stuck) {
        snprintf(left, sizeof left, "not shrinking");
    } else {
        char eta[32];
        long long ms = (long long)((double)pending * dt / shrunk);
        progress_duration(eta, sizeof eta, ms < 1000 ? 1000 : ms); /* never "about 0 s" */
        snprintf(left, sizeof left, "about %s left", eta);
    }
    snprintf(line, line_size, "backlog of %s: %s pending, %s events/s over the last %lld s, %s",
             name, what, rate, (dt + 500) / 1000, left);
    return 1;
}

static void begin_interval(progress *p, long long now, long long pending, long long done)
{
    p->sampled = 1;
    p->at_ms = now;
    p->pending = pending;
    p->done = done;
}

int progress_sample(progress *p, const char *name, long long now, long long pending, long long done,
                    char *line, size_t line_size)
{
    /* Not known: a 0 taken for it would make the first line "not shrinking";
     * but a backlog seen next counts its events from here. */
    int known = pending >= 0;
    if (!known || !p->had_prev) {
        p->had_prev = 1;
        p->prev_ms = now;
        p->prev_done = done;
    }
    if (!known)
        return 0;
    if (!p->sampled)
        begin_interval(p, now, pending, done);
    long long min = p->bytes ? PROGRESS_MIN_BYTES : PROGRESS_MIN_EVENTS;
    /* A few events that nothing finished may be stuck, not drained: the
     * interval's end says. The slot's lag counts no events (and keeps what
     * the server wrote since the last confirm), so bytes have no such case. */
    int waiting = !p->bytes && pending > 0 && done == p->done;
    int said = 0;
    if (p->seen && pending < min && !waiting) { /* over: said at once, not at the interval's end */
        if (p->logged) {
            char n[32], took[32];
            progress_count(n, sizeof n, done - p->since_done);
            progress_duration(took, sizeof took, now - p->since_ms);
            snprintf(line, line_size, "backlog of %s drained: %s events in %s", name, n, took);
            said = 1;
        }
        p->seen = p->logged = 0; /* a burst gone within an interval was never worth a line */
        begin_interval(p, now, pending, done);
    } else if (!p->seen && pending >= min) {
        /* It appeared: shrink and rate from here (from the idle sample
         * before, the first line would always say "not shrinking"). */
        p->seen = 1;
        p->since_ms = p->prev_ms;
        p->since_done = p->prev_done;
        begin_interval(p, now, pending, done);
    } else if (now - p->at_ms >= PROGRESS_INTERVAL_MS) {
        said = interval_line(p, name, now, pending, done, min, waiting, line, line_size);
        begin_interval(p, now, pending, done);
    }
    p->prev_ms = now;
    p->prev_done = done;
    return said;
}
