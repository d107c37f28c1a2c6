#include "event/outcome.h"

#include <math.h>
#include <stdio.h>

#include "base/text.h"

long long outcome_backoff_ms(const retry_policy *p, unsigned attempt, double random01)
{
    double delay = p->initial_ms * pow(p->multiplier, attempt > 0 ? attempt - 1 : 0);
    if (delay > p->max_ms)
        delay = p->max_ms;
    return (long long)(delay * (1.0 - p->jitter * random01));
}

static const char *status_name(obx_status s)
{
    static const char *const names[] = {"ok", "retriable", "permanent", "fatal", "unavailable"};
    return (unsigned)s <= OBX_STATUS_MAX ? names[s] : "retriable";
}

/* "PREFIX: detail (code N)", cut on a character boundary, invalid bytes replaced. */
static void describe(decision *out, const char *prefix, const verdict *v)
{
    char raw[OUTCOME_ERROR_MAX * 2];
    const char *detail = v->detail && v->detail[0] ? v->detail : "no reason given";
    int n = snprintf(raw, sizeof raw, "%s%s%s", prefix, prefix[0] ? ": " : "", detail);
    if (v->native_code && n > 0 && (size_t)n < sizeof raw)
        snprintf(raw + n, sizeof raw - n, " (code %d)", v->native_code);
    text_copy(out->error, sizeof out->error, raw);
}

void outcome_decide(const retry_policy *p, const verdict *v, unsigned attempt, int after_failure,
                    long long pause_ms, double random01, decision *out)
{
    out->delay_ms = 0;
    out->error[0] = '\0';
    obx_status status = v->status;
    if ((unsigned)status > OBX_STATUS_MAX)
        status = OBX_RETRIABLE; /* a driver out of contract: its message's fault */

    if (after_failure || v->kind == VERDICT_ABORTED) {
        out->outcome = OUTCOME_RELEASE;
        return;
    }
    if (v->kind == VERDICT_DROPPED) {
        out->outcome = OUTCOME_PUBLISHED;
        return;
    }
    if (v->kind == VERDICT_NOT_SENT || status == OBX_UNAVAILABLE || status == OBX_FATAL) {
        out->outcome = OUTCOME_DEFER;
        out->delay_ms = pause_ms;
        describe(out, v->kind == VERDICT_NOT_SENT ? "not sent" : status_name(status), v);
        return;
    }
    if (v->kind == VERDICT_BAD_ROW) {
        out->outcome = OUTCOME_DEAD;
        describe(out, "", v);
        return;
    }
    if (status == OBX_OK) {
        out->outcome = OUTCOME_PUBLISHED;
        return;
    }
    const char *refused = v->kind == VERDICT_REFUSED ? "refused" : "";
    if (status == OBX_PERMANENT) { /* the driver's own words say why */
        out->outcome = OUTCOME_DEAD;
        describe(out, refused, v);
        return;
    }
    char prefix[96];
    if ((int)attempt >= p->max_attempts) {
        out->outcome = OUTCOME_DEAD;
        snprintf(prefix, sizeof prefix, "gave up after %u attempts%s%s", attempt,
                 refused[0] ? ", " : "", refused);
    } else {
        out->outcome = OUTCOME_RETRY;
        out->delay_ms = outcome_backoff_ms(p, attempt, random01);
        snprintf(prefix, sizeof prefix, "%s%sretriable", refused, refused[0] ? ", " : "");
    }
    describe(out, prefix, v);
}
