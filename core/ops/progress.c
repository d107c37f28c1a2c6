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
    if (!p->sampled) {
        begin_interval(p, now, pending, done);
        return 0;
    }
    long long min = p->bytes ? PROGRESS_MIN_BYTES : PROGRESS_MIN_EVENTS;
    /* A few events that nothing finished may be stuck, not drained: the
     * interval's end says. The slot's lag never reaches 0 (what the server
     * wrote since the last confirm), so bytes have no such case. */
    int waiting = !p->bytes && pending > 0 && done == p->done;
    char what[48], left[48], rate[32], took[48];
    if (p->backlog && pending < min && !waiting) { /* at once, not at the interval's end */
        progress_count(what, sizeof what, done - p->since_done);
        progress_duration(took, sizeof took, now - p->since_ms);
        snprintf(line, line_size, "backlog of %s drained: %s events in %s", name, what, took);
        p->backlog = 0;
        begin_interval(p, now, pending, done);
        return 1;
    }
    long long dt = now - p->at_ms;
    if (dt < PROGRESS_INTERVAL_MS)
        return 0;
    long long shrunk = p->pending - pending;
    int stuck = shrunk <= 0 && pending > 0 && (pending >= min || waiting);
    if (pending < min && !stuck) { /* idle, or a small flow that keeps up */
        begin_interval(p, now, pending, done);
        return 0;
    }
    if (!p->backlog) {
        p->backlog = 1;
        p->since_ms = p->at_ms;
        p->since_done = p->done;
    }
    amount(p, pending, what, sizeof what);
    progress_count(rate, sizeof rate, (done - p->done) * 1000 / dt);
    if (stuck) {
        snprintf(left, sizeof left, "not shrinking");
    } else {
        char eta[32];
        progress_duration(eta, sizeof eta, (long long)((double)pending * dt / shrunk));
        snprintf(left, sizeof left, "about %s left", eta);
    }
    snprintf(line, line_size, "backlog of %s: %s pending, %s events/s over the last %lld s, %s",
             name, what, rate, (dt + 500) / 1000, left);
    begin_interval(p, now, pending, done);
    return 1;
}
