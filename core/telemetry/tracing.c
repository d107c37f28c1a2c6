#include "telemetry/tracing.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"

#define QUEUE_MAX 8192 /* finished spans waiting; past it they are dropped, counted */
#define SEND_BATCH 512 /* spans per request */
#define SEND_EVERY_MS 500
#define BUCKETS 4096 /* open spans, by token */
#define DETAIL_MAX 200

typedef struct span {
    struct span *next; /* in its bucket */
    uint64_t token;
    trace_context ctx;
    char span_id[17];
    long long start_ns, end_ns;
    int ok;
    char detail[DETAIL_MAX];
    char *destination, *event_id, *output, *system;
} span;

struct tracing_open {
    pthread_mutex_t lock;
    unsigned rand_state; /* span ids */
    span *bucket[BUCKETS];
};

static struct exporter {
    char *endpoint, *service;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    span *queue[QUEUE_MAX];
    size_t queued;
    int stop;
    long long dropped;
} ex;
static atomic_int running;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int lower_hex(const char *s, size_t n)
{
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
        nonzero |= s[i] != '0';
    }
    return nonzero ? 1 : -1; /* -1: all zero, which the spec forbids */
}

int trace_context_parse(const char *s, trace_context *tc)
{
    /* 00-<trace 32>-<span 16>-<flags 2>: 55 characters */
    if (!s || strlen(s) != 55 || strncmp(s, "00-", 3) != 0 || s[35] != '-' || s[52] != '-' ||
        lower_hex(s + 3, 32) != 1 || lower_hex(s + 36, 16) != 1 || lower_hex(s + 53, 2) == 0)
        return -1;
    memcpy(tc->trace_id, s + 3, 32);
    tc->trace_id[32] = '\0';
    memcpy(tc->parent_id, s + 36, 16);
    tc->parent_id[16] = '\0';
    return 0;
}

static void span_free(span *sp)
{
    free(sp->destination);
    free(sp->event_id);
    free(sp->output);
    free(sp->system);
    free(sp);
}

/* ---- OTLP/HTTP JSON ---- */

static json_t *attribute(const char *key, const char *value)
{
    return json_pack("{s:s,s:{s:s}}", "key", key, "value", "stringValue", value ? value : "");
}

static json_t *span_json(const span *sp)
{
    char start[24], end[24], name[300];
    snprintf(start, sizeof start, "%lld", sp->start_ns);
    snprintf(end, sizeof end, "%lld", sp->end_ns);
    snprintf(name, sizeof name, "publish %s", sp->destination);
    json_t *attrs = json_array();
    json_array_append_new(attrs, attribute("messaging.system", sp->system));
    json_array_append_new(attrs, attribute("messaging.operation.type", "publish"));
    json_array_append_new(attrs, attribute("messaging.destination.name", sp->destination));
    json_array_append_new(attrs, attribute("messaging.message.id", sp->event_id));
    json_array_append_new(attrs, attribute("outbox_relay.output", sp->output));
    json_t *status = sp->ok ? json_pack("{s:i}", "code", 1)
                            : json_pack("{s:i,s:s}", "code", 2, "message", sp->detail);
    /* kind 4: SPAN_KIND_PRODUCER */
    return json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:o,s:o}", "traceId", sp->ctx.trace_id, "spanId",
                     sp->span_id, "parentSpanId", sp->ctx.parent_id, "name", name, "kind", 4,
                     "startTimeUnixNano", start, "endTimeUnixNano", end, "attributes", attrs,
                     "status", status);
}

static char *request_body(span **spans, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, span_json(spans[i]));
    json_t *body = json_pack("{s:[{s:{s:[o]},s:[{s:{s:s},s:o}]}]}", "resourceSpans", "resource",
                             "attributes", attribute("service.name", ex.service), "scopeSpans",
                             "scope", "name", "outbox-relay", "spans", list);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* POSTs spans[0..n); a failure is logged and the spans are not sent again
 * (traces are best effort: the events' delivery never waits for them). */
static void send_spans(CURL *curl, span **spans, size_t n)
{
    char *body = request_body(spans, n);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, ex.endpoint);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code < 200 || code >= 300)
        log_warn("tracing: %zu spans not taken by %s: %s", n, ex.endpoint,
                 rc != CURLE_OK ? curl_easy_strerror(rc) : "an HTTP status other than 2xx");
    curl_slist_free_all(headers);
    free(body);
}

static void *export_main(void *arg)
{
    (void)arg;
    CURL *curl = curl_easy_init();
    span *batch[SEND_BATCH];
    pthread_mutex_lock(&ex.lock);
    for (;;) {
        if (ex.queued < SEND_BATCH && !ex.stop) {
            struct timespec until = clock_deadline(SEND_EVERY_MS);
            pthread_cond_timedwait(&ex.wake, &ex.lock, &until);
        }
        size_t n = ex.queued < SEND_BATCH ? ex.queued : SEND_BATCH;
        memcpy(batch, ex.queue, n * sizeof *batch);
        memmove(ex.queue, ex.queue + n, (ex.queued - n) * sizeof *ex.queue);
        ex.queued -= n;
        int done = ex.stop && ex.queued == 0;
        pthread_mutex_unlock(&ex.lock);
        if (n && curl)
            send_spans(curl, batch, n);
        for (size_t i = 0; i < n; i++)
            span_free(batch[i]);
        pthread_mutex_lock(&ex.lock);
        if (done)
            break;
    }
    pthread_mutex_unlock(&ex.lock);
    if (curl)
        curl_easy_cleanup(curl);
    return NULL;
}

int tracing_start(const relay_config *cfg, char *err, size_t err_size)
{
    if (!cfg->otlp_endpoint)
        return 0;
    curl_global_init(CURL_GLOBAL_DEFAULT); /* before any thread uses libcurl */
    memset(&ex, 0, sizeof ex);
    ex.endpoint = strdup(cfg->otlp_endpoint);
    ex.service = strdup(cfg->service_name);
    pthread_mutex_init(&ex.lock, NULL);
    pthread_cond_init(&ex.wake, NULL);
    if (pthread_create(&ex.thread, NULL, export_main, NULL) != 0) {
        snprintf(err, err_size, "tracing: cannot start the exporter thread");
        return -1;
    }
    atomic_store(&running, 1);
    log_info("tracing: a span per publish of an event with a traceparent, sent to %s",
             cfg->otlp_endpoint);
    return 0;
}

void tracing_stop(void)
{
    if (!atomic_exchange(&running, 0))
        return;
    pthread_mutex_lock(&ex.lock);
    ex.stop = 1;
    pthread_cond_signal(&ex.wake);
    pthread_mutex_unlock(&ex.lock);
    pthread_join(ex.thread, NULL);
    if (ex.dropped)
        log_warn("tracing: %lld spans dropped (the collector was behind)", ex.dropped);
    pthread_mutex_destroy(&ex.lock);
    pthread_cond_destroy(&ex.wake);
    free(ex.endpoint);
    free(ex.service);
}

static void enqueue(span *sp)
{
    pthread_mutex_lock(&ex.lock);
    if (ex.queued == QUEUE_MAX || ex.stop) {
        ex.dropped++;
        span_free(sp);
    } else {
        ex.queue[ex.queued++] = sp;
        if (ex.queued >= SEND_BATCH)
            pthread_cond_signal(&ex.wake);
    }
    pthread_mutex_unlock(&ex.lock);
}

/* ---- open spans ---- */

tracing_open *tracing_open_new(void)
{
    if (!atomic_load(&running))
        return NULL;
    tracing_open *o = calloc(1, sizeof *o);
    pthread_mutex_init(&o->lock, NULL);
    o->rand_state = (unsigned)now_ns() ^ (unsigned)(uintptr_t)o;
    return o;
}

void tracing_open_free(tracing_open *o)
{
    if (!o)
        return;
    for (size_t b = 0; b < BUCKETS; b++)
        for (span *sp = o->bucket[b], *next; sp; sp = next) {
            next = sp->next;
            span_free(sp); /* never answered: no span is sent */
        }
    pthread_mutex_destroy(&o->lock);
    free(o);
}

static const char *header_value(const obx_message *m, const char *key)
{
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key && m->headers[i].value && strcmp(m->headers[i].key, key) == 0)
            return m->headers[i].value;
    return NULL;
}

void tracing_begin(tracing_open *o, const obx_message *m, const char *output, const char *system)
{
    trace_context ctx;
    if (!o || trace_context_parse(header_value(m, "traceparent"), &ctx) < 0)
        return;
    span *sp = calloc(1, sizeof *sp);
    sp->token = m->token;
    sp->ctx = ctx;
    sp->start_ns = now_ns();
    sp->destination = strdup(m->destination ? m->destination : "");
    sp->event_id = strdup(m->event_id ? m->event_id : "");
    sp->output = strdup(output);
    sp->system = strdup(system);
    pthread_mutex_lock(&o->lock);
    uint64_t id = ((uint64_t)rand_r(&o->rand_state) << 33) ^
                  ((uint64_t)rand_r(&o->rand_state) << 2) ^ m->token;
    snprintf(sp->span_id, sizeof sp->span_id, "%016llx", (unsigned long long)(id | 1));
    span **head = &o->bucket[m->token % BUCKETS];
    sp->next = *head;
    *head = sp;
    pthread_mutex_unlock(&o->lock);
}

void tracing_end(tracing_open *o, uint64_t token, int ok, const char *detail)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    span **p = &o->bucket[token % BUCKETS];
    while (*p && (*p)->token != token)
        p = &(*p)->next;
    span *sp = *p;
    if (sp)
        *p = sp->next;
    pthread_mutex_unlock(&o->lock);
    if (!sp)
        return;
    sp->end_ns = now_ns();
    sp->ok = ok;
    text_copy(sp->detail, sizeof sp->detail, detail ? detail : "");
    enqueue(sp);
}
