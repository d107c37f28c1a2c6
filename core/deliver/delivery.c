#include "deliver/delivery.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"
#include "telemetry/counters.h"

static void use_config(delivery *d)
{
    const relay_config *cfg = d->outs.gen->cfg;
    d->cfg = cfg;
    d->policy = (retry_policy){cfg->max_attempts, cfg->backoff_initial_ms, cfg->backoff_max_ms,
                               cfg->backoff_multiplier, cfg->backoff_jitter};
}

static void on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail)
{
    delivery *d = arg;
    tracing_end(d->spans, token, status == OBX_OK, detail);
    d->intake(d->intake_arg, delivery_token_key(token), delivery_token_check(token), status,
              native_code, detail ? detail : "");
}

/* Only from inside publish_batch, on the publishing thread: the reason is
 * kept beside the refused message. */
static void on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    delivery *d = arg;
    (void)native_code;
    for (size_t k = 0; k < d->publishing_count; k++)
        if (d->publishing[k].token == token) {
            text_copy(d->refusal[k], sizeof d->refusal[k], detail ? detail : "");
            return;
        }
}

void delivery_init(delivery *d, relay_state *st, int worker_index, delivery_intake_fn intake,
                   void *intake_arg)
{
    memset(d, 0, sizeof *d);
    d->st = st;
    d->intake = intake;
    d->intake_arg = intake_arg;
    d->rand_state = (unsigned)(getpid() * 7919 + worker_index * 104729 + time(NULL));
    d->spans = tracing_open_new();
    outputs_init(&d->outs, st, worker_index, on_complete, on_refuse, d);
    use_config(d);
}

void delivery_free(delivery *d)
{
    outputs_free(&d->outs); /* its last completions close spans */
    tracing_open_free(d->spans);
}

int delivery_switch(delivery *d)
{
    if (!outputs_switch(&d->outs))
        return 0;
    use_config(d);
    return 1;
}

size_t delivery_publish(delivery *d, size_t out, const obx_message *msgs,
                        const obx_message_ext *ext, size_t count, obx_status *accept,
                        char (*refusal)[DELIVERY_DETAIL_MAX])
{
    output_instance *oi = &d->outs.out[out];
    for (size_t k = 0; k < count; k++) {
        accept[k] = OBX_RETRIABLE;
        refusal[k][0] = '\0';
        counters_sent(d->st->metrics, d->cfg, out); /* in flight until settled */
        tracing_begin(d->spans, &msgs[k], d->cfg->outputs[out].name, oi->host->driver->def.name);
    }
    d->publishing = msgs;
    d->publishing_count = count;
    d->refusal = refusal;
    atomic_fetch_add(&oi->host->owed, (long)count); /* completions may come before it returns */
    oi->host->pub_msgs = msgs;
    oi->host->pub_ext = ext;
    oi->host->pub_count = count;
    obx_status rc = oi->host->driver->def.publish_batch(oi->inst, msgs, count, accept);
    oi->host->pub_count = 0;
    d->publishing_count = 0;
    if (rc == OBX_FATAL)
        atomic_store(&oi->broken, 1);
    size_t accepted = 0;
    for (size_t k = 0; k < count; k++) {
        if (accept[k] == OBX_OK) {
            accepted++;
            continue;
        }
        atomic_fetch_sub(&oi->host->owed, 1); /* refused: no completion comes */
        if (rc == OBX_FATAL)
            accept[k] = OBX_FATAL;
        if (!refusal[k][0])
            text_copy(refusal[k], sizeof refusal[k],
                      rc == OBX_FATAL ? "driver instance failed" : "refused by the driver");
        tracing_end(d->spans, msgs[k].token, 0, refusal[k]);
    }
    return accepted;
}

/* Tells an output's health what one message said. */
static void learn_health(delivery *d, const settle_item *it)
{
    int answered = it->v.kind == VERDICT_COMPLETED || it->v.kind == VERDICT_REFUSED;
    if (!answered)
        return;
    if (it->v.kind == VERDICT_COMPLETED && it->v.status == OBX_OK) {
        outputs_succeeded(&d->outs, it->output);
        health_proved(outputs_health(&d->outs, it->output), it->since_ms);
    } else if (it->v.status == OBX_UNAVAILABLE)
        health_down(outputs_health(&d->outs, it->output), it->v.detail);
    else if (it->v.status == OBX_FATAL && it->output < d->outs.count)
        atomic_store(&d->outs.out[it->output].broken, 1);
}

/* A broker's answer that a message can never succeed is the message's own
 * fault only when the output took something sent as late (health.h, the
 * circuit breaker): else it is retried, or deferred as in an outage. A
 * driver's refusal before sending (a bad destination) is the message's. */
static verdict judged(delivery *d, const settle_item *it)
{
    verdict v = it->v;
    if (!d->cfg->circuit_breaker || v.kind != VERDICT_COMPLETED || v.status != OBX_PERMANENT)
        return v;
    switch (
        health_refused(outputs_health(&d->outs, it->output), it->since_ms, it->attempt, v.detail)) {
    case REFUSAL_OWN: break;
    case REFUSAL_SUSPECT: v.status = OBX_RETRIABLE; break;
    case REFUSAL_OUTAGE: v.status = OBX_UNAVAILABLE; break;
    }
    return v;
}

void delivery_settle(delivery *d, const settle_item *items, size_t count, decision *out)
{
    /* every acknowledgement first: it proves the output for the refusals */
    for (size_t i = 0; i < count; i++)
        learn_health(d, &items[i]);
    verdict *v = malloc((count ? count : 1) * sizeof *v);
    for (size_t i = 0; i < count; i++)
        v[i] = items[i].v.kind == VERDICT_DROPPED ? items[i].v : judged(d, &items[i]);
    for (size_t i = 0; i < count; i++) {
        const settle_item *it = &items[i];
        if (it->v.kind == VERDICT_DROPPED) { /* no output: counted on its route alone */
            outcome_decide(&d->policy, &v[i], it->attempt, it->after_failure, 0, 0, &out[i]);
            if (out[i].outcome == OUTCOME_PUBLISHED)
                counters_dropped(d->st->metrics, d->cfg, it->route);
            continue;
        }
        long long pause = outputs_pause_ms(&d->outs, it->output);
        double r = (double)rand_r(&d->rand_state) / ((double)RAND_MAX + 1.0);
        outcome_decide(&d->policy, &v[i], it->attempt, it->after_failure, pause > 100 ? pause : 100,
                       r, &out[i]);
        counters_observe_completion(d->st->metrics, d->cfg, it->output, it->route, it->offered,
                                    it->created_at_us, it->since_ms, out[i].outcome,
                                    it->v.kind == VERDICT_REFUSED);
    }
    free(v);
}
