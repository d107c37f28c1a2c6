#include "host/health.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"

/* A paused output is probed after 100 ms, then up to every 2 s: an outage of
 * a few seconds costs at most about as long again. */
#define PROBE_FIRST_MS 100
#define PROBE_MAX_MS 2000

void health_init(output_health *h, const char *name)
{
    memset(h, 0, sizeof *h);
    h->name = name;
    pthread_mutex_init(&h->lock, NULL);
}

void health_destroy(output_health *h)
{
    pthread_mutex_destroy(&h->lock);
}

/* Caller holds the lock. */
static long long go_down(output_health *h, const char *reason)
{
    long long now = now_ms();
    if (!h->down) {
        h->down = 1;
        h->up_at_ms = 0;
        h->backoff_ms = PROBE_FIRST_MS;
        if (!h->down_since_ms) { /* else a probe passed but no send did: the same outage */
            h->down_since_ms = now;
            h->outages++;
            log_warn("output %s unavailable: %s; paused, no attempts counted while it is down",
                     h->name, reason && reason[0] ? reason : "no reason given");
        }
    } else if (now >= h->probe_at_ms) {
        h->backoff_ms = h->backoff_ms * 2 > PROBE_MAX_MS ? PROBE_MAX_MS : h->backoff_ms * 2;
    }
    if (h->probe_at_ms < now + h->backoff_ms)
        h->probe_at_ms = now + h->backoff_ms;
    return h->backoff_ms;
}

long long health_down(output_health *h, const char *reason)
{
    pthread_mutex_lock(&h->lock);
    long long pause = go_down(h, reason);
    pthread_mutex_unlock(&h->lock);
    return pause;
}

void health_proved(output_health *h, long long sent_ms)
{
    pthread_mutex_lock(&h->lock);
    if (!h->proved || sent_ms >= h->ok_sent_ms) {
        h->proved = 1;
        h->ok_sent_ms = sent_ms;
        h->refusals = 0;
    }
    pthread_mutex_unlock(&h->lock);
}

refusal_kind health_refused(output_health *h, long long sent_ms, unsigned attempt,
                            const char *reason)
{
    refusal_kind kind = REFUSAL_SUSPECT;
    pthread_mutex_lock(&h->lock);
    if (h->proved && sent_ms <= h->ok_sent_ms) {
        kind = REFUSAL_OWN;
    } else if (h->down) {
        /* sent before the pause, or as the probe of an output without one */
        go_down(h, reason);
        kind = REFUSAL_OUTAGE;
    } else if (attempt >= HEALTH_SUSPECT_TRIES) {
        kind = REFUSAL_OWN; /* refused again and again while the output is up */
    } else if (++h->refusals >= HEALTH_REFUSALS) {
        char why[512];
        snprintf(why, sizeof why,
                 "%d messages in a row refused for good and nothing acknowledged since they "
                 "were sent (the last: %s): taken as the output's fault",
                 h->refusals, reason && reason[0] ? reason : "no reason given");
        go_down(h, why);
        h->refusals = 0;
        kind = REFUSAL_OUTAGE;
    }
    pthread_mutex_unlock(&h->lock);
    return kind;
}

void health_up(output_health *h, int acked)
{
    long long now = now_ms();
    pthread_mutex_lock(&h->lock);
    if (h->down) {
        h->down = 0;
        h->up_at_ms = now;
    }
    /* the whole outage, not the last probe's wait (issue 49) */
    if (acked && h->down_since_ms) {
        long long down_ms = (h->up_at_ms ? h->up_at_ms : now) - h->down_since_ms;
        log_info("output %s is back after %.1f s down", h->name, (double)down_ms / 1000.0);
        h->down_since_ms = h->up_at_ms = 0;
    }
    pthread_mutex_unlock(&h->lock);
}

int health_is_down(output_health *h)
{
    pthread_mutex_lock(&h->lock);
    int down = h->down;
    pthread_mutex_unlock(&h->lock);
    return down;
}

int health_take_probe(output_health *h)
{
    long long now = now_ms();
    pthread_mutex_lock(&h->lock);
    int mine = h->down && now >= h->probe_at_ms;
    if (mine) {
        h->backoff_ms = h->backoff_ms * 2 > PROBE_MAX_MS ? PROBE_MAX_MS : h->backoff_ms * 2;
        h->probe_at_ms = now + h->backoff_ms;
    }
    pthread_mutex_unlock(&h->lock);
    return mine;
}

long long health_wait_ms(output_health *h)
{
    pthread_mutex_lock(&h->lock);
    long long left = h->down ? h->probe_at_ms - now_ms() : 0;
    pthread_mutex_unlock(&h->lock);
    return left > 0 ? left : 0;
}

void health_read(output_health *h, int *up, long long *outages)
{
    pthread_mutex_lock(&h->lock);
    *up = !h->down;
    *outages = h->outages;
    pthread_mutex_unlock(&h->lock);
}
