/*
 * The messages check-driver publishes: realistic ones (uuid event ids, JSON
 * payloads with UTF-8 and escapes, a binary and an empty payload, headers or
 * none), their memory poisoned and freed as soon as publish_batch returns.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance/conformance_run.h"

typedef struct cf_batch {
    size_t count;
    obx_message *msgs;
    obx_status *accept;
    obx_header *headers;
    struct cf_msg_mem *arena;
} cf_batch;

/* The strings of one message, poisoned after publish_batch returns. */
typedef struct cf_msg_mem {
    char event_id[40], agg[40], trace[80], payload[608];
} cf_msg_mem;

static void cf_uuid(cf_run *run, char *out)
{
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (unsigned char)rand_r(&run->rand_state);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
            b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
            b[15]);
}

/* Builds count messages with the next tokens of rec. */
static cf_batch *cf_batch_new(cf_run *run, cf_recorder *rec, size_t count)
{
    static const char *const types[] = {"order.created", "order.paid", "order.shipped"};
    cf_batch *b = calloc(1, sizeof *b);
    size_t n = count ? count : 1; /* a real array even for a batch of 0 */
    b->count = count;
    b->msgs = calloc(n, sizeof *b->msgs);
    b->accept = calloc(n, sizeof *b->accept);
    b->headers = calloc(n * 2, sizeof *b->headers);
    b->arena = calloc(n, sizeof *b->arena);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pthread_mutex_lock(&rec->lock);
    size_t first = rec->used;
    if (first + count > CF_CAPACITY) {
        fprintf(stderr, "check-driver: internal error: ledger full\n");
        abort();
    }
    rec->used += count;
    pthread_mutex_unlock(&rec->lock);

    for (size_t i = 0; i < count; i++) {
        size_t seq = first + i;
        cf_msg_mem *a = &b->arena[i];
        obx_message *m = &b->msgs[i];
        char *event_id = a->event_id, *agg = a->agg, *trace = a->trace, *payload = a->payload;
        cf_uuid(run, event_id);
        snprintf(agg, 40, "order-%zu", seq % 37);
        snprintf(trace, 80, "00-%08x%08x%08x%08x-%08x%08x-01", (unsigned)rand_r(&run->rand_state),
                 (unsigned)rand_r(&run->rand_state), (unsigned)seq, rec->tag,
                 (unsigned)rand_r(&run->rand_state), (unsigned)seq);
        *m = (obx_message){
            .token = ((uint64_t)rec->tag << 32) | seq,
            .event_id = event_id,
            .event_type = types[seq % 3],
            .aggregate_type = "Order",
            .aggregate_id = agg,
            .destination = run->destination,
            .content_type = "application/json",
            .created_at_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 - 1000 + (int64_t)i,
            .attempt = 1,
        };
        if (seq % 50 == 49) { /* a binary payload: every byte value */
            for (int k = 0; k < 256; k++)
                payload[k] = (char)k;
            m->payload = payload;
            m->payload_len = 256;
            m->content_type = "application/octet-stream";
        } else if (seq % 97 == 13) { /* an empty payload: never NULL, but it may be empty */
            payload[0] = '\0';
            m->payload = payload;
            m->payload_len = 0;
        } else {
            int len = snprintf(payload, sizeof a->payload,
                               "{\"order_id\":\"%s\",\"seq\":%zu,\"amount_cents\":%u,"
                               "\"currency\":\"EUR\",\"customer\":\"Zo\xc3\xab \\\"Q\\\" "
                               "M\xc3\xbcller\",\"lines\":[{\"sku\":\"SKU-%u\",\"qty\":%zu}]}",
                               agg, seq, (unsigned)rand_r(&run->rand_state) % 100000,
                               (unsigned)rand_r(&run->rand_state) % 9999, 1 + seq % 5);
            m->payload = payload;
            m->payload_len = (size_t)len;
        }
        if (seq % 3 != 2) { /* some rows have no headers */
            obx_header *h = &b->headers[i * 2];
            h[0] = (obx_header){"traceparent", trace};
            h[1] = (obx_header){"tenant", seq % 2 ? "acme" : "globex"};
            m->headers = h;
            m->header_count = 2;
        }
    }
    return b;
}

/* After publish returns: record accept statuses, then poison and free the memory. */
static size_t cf_batch_done(cf_recorder *rec, cf_batch *b)
{
    size_t accepted = ledger_publish_end(rec, b->msgs, b->count, b->accept);
    size_t n = b->count ? b->count : 1;
    memset(b->arena, 0xA5, n * sizeof *b->arena);
    memset(b->headers, 0xA5, n * 2 * sizeof *b->headers);
    memset(b->msgs, 0xA5, n * sizeof *b->msgs);
    free(b->arena);
    free(b->headers);
    free(b->msgs);
    free(b->accept);
    free(b);
    return accepted;
}

/* Publishes count messages; returns the accepted count, sets *rc and *ms. */
size_t cf_publish(cf_run *run, cf_instance *ci, size_t count, obx_status *rc, int64_t *ms)
{
    cf_batch *b = cf_batch_new(run, &ci->rec, count);
    /* a driver that does not write accept[] must not pass by luck */
    for (size_t i = 0; i < count; i++)
        b->accept[i] = (obx_status)0x7f;
    ledger_publish_begin(&ci->rec, b->msgs, count);
    int64_t t0 = cf_now_ms();
    obx_status r = run->def->publish_batch(ci->inst, b->msgs, count, b->accept);
    if (ms)
        *ms = cf_now_ms() - t0;
    if (rc)
        *rc = r;
    size_t accepted = cf_batch_done(&ci->rec, b);
    cf_count_refusals(run, &ci->rec);
    return accepted;
}

/* Drives poll on n instances until nothing is pending or the run's timeout;
 * returns what is left. Stops early once completions go to the wrong
 * instance: what is missing will never come. */
size_t cf_drain_all(cf_run *run, cf_instance **cis, size_t n)
{
    int64_t deadline = cf_now_ms() + run->timeout_ms;
    for (;;) {
        size_t left = 0;
        int misrouted = 0;
        for (size_t i = 0; i < n; i++) {
            left += cf_pending(&cis[i]->rec);
            misrouted |= cf_misrouted(&cis[i]->rec);
        }
        if (left == 0 || misrouted || cf_now_ms() >= deadline)
            return left;
        for (size_t i = 0; i < n; i++) {
            if (run->def->poll)
                run->def->poll(cis[i]->inst, n > 1 ? 10 : 50);
            else
                cf_sleep_ms(5);
        }
    }
}

size_t cf_drain(cf_run *run, cf_instance *ci)
{
    return cf_drain_all(run, &ci, 1);
}

/* Publishes count, waits for all completions, checks; returns 0 when it passed. */
int cf_publish_and_drain(cf_run *run, cf_instance *ci, const char *name, size_t count)
{
    obx_status rc;
    int64_t ms;
    size_t accepted = cf_publish(run, ci, count, &rc, &ms);
    if (rc != OBX_OK) {
        cf_fail(run, name,
                "publish_batch of %zu messages returned %d on a fresh instance "
                "(expected OBX_OK)",
                count, (int)rc);
        return -1;
    }
    if (accepted == 0) {
        cf_fail(run, name,
                "none of %zu messages was accepted: accept[i] = OBX_OK is expected "
                "for a healthy instance",
                count);
        return -1;
    }
    size_t left = cf_drain(run, ci);
    if (cf_violations(run, &ci->rec, name))
        return -1;
    if (left) {
        cf_fail(run, name,
                "%zu of %zu accepted messages got no completion within %d ms: every "
                "accepted message needs exactly one completion (from poll, "
                "publish_batch or a driver thread)",
                left, accepted, run->timeout_ms);
        return -1;
    }
    cf_pass(run, name, "%zu accepted, %zu refused, publish_batch took %lld ms", accepted,
            count - accepted, (long long)ms);
    return 0;
}
