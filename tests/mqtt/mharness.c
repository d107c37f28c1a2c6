/*
 * mharness: drives drivers/mqtt.so directly through a recording fake host,
 * against a real Mosquitto. It checks the completion contract (exactly one
 * completion per accepted message, none after close) and the driver's own
 * rules. Each scenario prints "ok ..." lines and exits non-zero on failure.
 *
 *   mharness DRIVER.so URL config|offline|publish N TOPIC|invalid|close|two|restart N TOPIC|
 *                          window N WINDOW TOPIC|order
 *
 * restart stops and starts the broker with $MQTT_STOP_CMD / $MQTT_START_CMD
 * while publishing.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"

#define MAXMSG 400000

static const obx_driver_def *def;
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- the recording host */
typedef struct opt {
    const char *name;
    int type; /* obx_option_type */
    const char *s;
    int64_t i;
} opt;

typedef struct fake_host {
    obx_host host;
    opt opts[16];
    int nopts;
    const char *prop_key, *prop_val;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    unsigned char *count; /* completions per token */
    obx_status *status;
    char last_detail[256];
    unsigned long completions, ok, retriable, permanent, unavailable, fatal, doubles, after_close;
    unsigned long refusals; /* host->refuse calls */
    char last_refusal[256];
    int closed;
} fake_host;

/* the driver's last INFO line starting "closed ": its counters */
static char closed_line[1024];

static void h_log(void *ctx, obx_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    (void)ctx;
    if (level == OBX_LOG_DEBUG && !getenv("MH_DEBUG"))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (strncmp(line, "closed ", 7) == 0)
        snprintf(closed_line, sizeof closed_line, "%s", line);
    fprintf(stderr, "  [driver %s] %s\n", names[level], line);
}

static opt *h_find(void *ctx, const char *name, int type)
{
    fake_host *h = ctx;
    for (int i = 0; i < h->nopts; i++)
        if (strcmp(h->opts[i].name, name) == 0 && h->opts[i].type == type)
            return &h->opts[i];
    return NULL;
}

static int h_str(void *ctx, const char *name, const char **out)
{
    opt *o = h_find(ctx, name, OBX_OPT_STRING);
    if (o)
        *out = o->s;
    return o != NULL;
}

static int h_int(void *ctx, const char *name, int64_t *out)
{
    opt *o = h_find(ctx, name, OBX_OPT_INT);
    if (o)
        *out = o->i;
    return o != NULL;
}

static int h_bool(void *ctx, const char *name, int *out)
{
    opt *o = h_find(ctx, name, OBX_OPT_BOOL);
    if (o)
        *out = (int)o->i;
    return o != NULL;
}

static int h_double(void *ctx, const char *name, double *out)
{
    (void)ctx, (void)name, (void)out;
    return 0;
}

static int h_prop(void *ctx, size_t index, const char **key, const char **value)
{
    fake_host *h = ctx;
    if (index > 0 || !h->prop_key)
        return 0;
    *key = h->prop_key;
    *value = h->prop_val;
    return 1;
}

static void h_complete(void *ctx, uint64_t token, obx_status status, int code, const char *detail)
{
    fake_host *h = ctx;
    (void)code;
    pthread_mutex_lock(&h->mu);
    if (h->closed)
        h->after_close++;
    if (token >= MAXMSG || h->count[token]++)
        h->doubles++;
    else
        h->status[token] = status;
    h->completions++;
    switch (status) {
    case OBX_OK: h->ok++; break;
    case OBX_RETRIABLE: h->retriable++; break;
    case OBX_PERMANENT: h->permanent++; break;
    case OBX_UNAVAILABLE: h->unavailable++; break;
    default: h->fatal++; break;
    }
    if (detail && status != OBX_OK)
        snprintf(h->last_detail, sizeof h->last_detail, "%s", detail);
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
}

static void h_refuse(void *ctx, uint64_t token, int code, const char *detail)
{
    fake_host *h = ctx;
    (void)token, (void)code;
    pthread_mutex_lock(&h->mu);
    h->refusals++;
    snprintf(h->last_refusal, sizeof h->last_refusal, "%s", detail ? detail : "");
    pthread_mutex_unlock(&h->mu);
}

static fake_host *host_new(const char *url)
{
    fake_host *h = calloc(1, sizeof *h);
    h->count = calloc(MAXMSG, 1);
    h->status = calloc(MAXMSG, sizeof *h->status);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->host = (obx_host){.struct_size = sizeof(obx_host),
                         .host_ctx = h,
                         .log = h_log,
                         .get_string = h_str,
                         .get_int = h_int,
                         .get_bool = h_bool,
                         .get_double = h_double,
                         .get_property = h_prop,
                         .complete = h_complete,
                         .refuse = h_refuse};
    if (url)
        h->opts[h->nopts++] = (opt){"url", OBX_OPT_STRING, url, 0};
    return h;
}

static void host_set(fake_host *h, const char *name, int type, const char *s, int64_t i)
{
    h->opts[h->nopts++] = (opt){name, type, s, i};
}

static void host_free(fake_host *h)
{
    free(h->count);
    free(h->status);
    free(h);
}

/* ---- helpers */
static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char ids[MAXMSG][48]; /* room for any 64-bit token */
static char payloads[MAXMSG][64];

static void make_msg(obx_message *m, uint64_t token, const char *topic, const obx_header *hdrs,
                     size_t nh)
{
    /* aggregate = token % 50, n = token: increasing within each aggregate */
    static char aggs[50][16];
    int a = (int)(token % 50);
    snprintf(aggs[a], sizeof aggs[a], "agg-%d", a);
    snprintf(ids[token], sizeof ids[token], "00000000-0000-4000-8000-%012" PRIu64, token);
    int n = snprintf(payloads[token], sizeof payloads[token], "{\"n\": %" PRIu64 "}", token);
    *m = (obx_message){.token = token,
                       .event_id = ids[token],
                       .event_type = "order.created",
                       .aggregate_type = "Order",
                       .aggregate_id = aggs[a],
                       .destination = topic,
                       .payload = payloads[token],
                       .payload_len = (size_t)n,
                       .content_type = "application/json",
                       .created_at_us = 1700000000123456,
                       .headers = hdrs,
                       .header_count = nh,
                       .attempt = 1};
}

/* Publish tokens [from, to) in order, in batches; a refused (RETRIABLE:
 * window full) message and everything after it is offered again after a
 * short flush. */
static unsigned long publish_range(obx_instance *inst, fake_host *h, uint64_t from, uint64_t to,
                                   const char *topic, int64_t deadline, unsigned long *refused)
{
    static obx_message batch[500];
    static obx_status acc[500];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}, {"tenant", "t1"}};
    uint64_t next = from;
    unsigned long accepted = 0;
    (void)h;
    while (next < to && now_ms() < deadline) {
        size_t n = 0;
        while (n < 500 && next + n < to) {
            make_msg(&batch[n], next + n, topic, hdrs, 2);
            n++;
        }
        obx_status st = def->publish_batch(inst, batch, n, acc);
        CHECK(st == OBX_OK, "publish_batch returned %d", st);
        size_t i = 0;
        while (i < n && acc[i] == OBX_OK)
            i++;
        accepted += i;
        next += i;
        /* the driver refuses the whole rest of a batch after a refusal */
        for (size_t k = i; k < n; k++)
            CHECK(acc[k] != OBX_OK, "token %" PRIu64 " accepted after a refused one",
                  batch[k].token);
        if (i < n) {
            (*refused)++;
            def->flush(inst, 20);
        }
    }
    return accepted;
}

static int wait_completions(fake_host *h, unsigned long want, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    pthread_mutex_lock(&h->mu);
    while (h->completions < want && now_ms() < end) {
        pthread_mutex_unlock(&h->mu);
        usleep(10000);
        pthread_mutex_lock(&h->mu);
    }
    int ok = h->completions >= want;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* ---- scenarios */
static obx_instance *create(fake_host *h, char *err, size_t errsz)
{
    err[0] = 0;
    return def->create(&h->host, err, errsz);
}

static void sc_config(const char *url)
{
    char err[256];
    struct {
        const char *what, *name;
        int type;
        const char *s;
        int64_t i;
        const char *expect;
    } bad[] = {
        {"qos 0", "qos", OBX_OPT_INT, NULL, 0, "qos"},
        {"qos 3", "qos", OBX_OPT_INT, NULL, 3, "qos"},
        {"max_in_flight 0", "max_in_flight", OBX_OPT_INT, NULL, 0, "max_in_flight"},
        {"tls on tcp", "tls_ca", OBX_OPT_STRING, "/nonexistent.pem", 0, "ssl://"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        fake_host *h = host_new(url);
        host_set(h, bad[k].name, bad[k].type, bad[k].s, bad[k].i);
        obx_instance *inst = create(h, err, sizeof err);
        CHECK(!inst && strstr(err, bad[k].expect), "%s: instance %p, errstr '%s'", bad[k].what,
              (void *)inst, err);
        if (inst)
            def->destroy(inst);
        else
            printf("ok config %s refused: %s\n", bad[k].what, err);
        host_free(h);
    }
    const char *bad_urls[] = {"http://127.0.0.1:1", "127.0.0.1:1883", NULL};
    for (int k = 0; k < 3; k++) {
        fake_host *h = host_new(bad_urls[k]);
        obx_instance *inst = create(h, err, sizeof err);
        CHECK(!inst && err[0], "url %s: instance %p, errstr '%s'",
              bad_urls[k] ? bad_urls[k] : "(none)", (void *)inst, err);
        if (inst)
            def->destroy(inst);
        else
            printf("ok config url %s refused: %s\n", bad_urls[k] ? bad_urls[k] : "(none)", err);
        host_free(h);
    }
    fake_host *h = host_new(url);
    h->prop_key = "linger.ms", h->prop_val = "5";
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(!inst && strstr(err, "linger.ms"), "native property accepted: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config native property refused: %s\n", err);
    host_free(h);

    /* the deprecated second-based options still work (converted to ms) */
    h = host_new(url);
    host_set(h, "keepalive_s", OBX_OPT_INT, NULL, 5);
    host_set(h, "connect_timeout_s", OBX_OPT_INT, NULL, 3);
    inst = create(h, err, sizeof err);
    CHECK(inst != NULL, "deprecated keepalive_s/connect_timeout_s refused: '%s'", err);
    if (inst) {
        def->destroy(inst);
        printf("ok config deprecated keepalive_s and connect_timeout_s accepted\n");
    }
    host_free(h);
    h = host_new(url);
    host_set(h, "connect_timeout_s", OBX_OPT_INT, NULL, 0);
    inst = create(h, err, sizeof err);
    CHECK(!inst && strstr(err, "connect_timeout_s"), "connect_timeout_s 0: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config deprecated option checked against its range: %s\n", err);
    host_free(h);

    /* a password must never show up in an error */
    h = host_new(url);
    host_set(h, "password", OBX_OPT_STRING, "s3cr3t-value", 0);
    inst = create(h, err, sizeof err);
    CHECK(!inst && !strstr(err, "s3cr3t"), "password without username: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config password without username refused without leaking it\n");
    host_free(h);
}

static void sc_offline(void)
{
    char err[256];
    fake_host *h = host_new("tcp://127.0.0.1:1"); /* nothing listens there */
    int64_t t0 = now_ms();
    obx_instance *inst = create(h, err, sizeof err);
    int64_t took = now_ms() - t0;
    CHECK(inst != NULL, "create with a broker down must succeed (lazy), errstr '%s'", err);
    if (!inst) {
        host_free(h);
        return;
    }
    CHECK(took < 15000, "create blocked %lld ms", (long long)took);
    obx_message m;
    obx_status acc;
    make_msg(&m, 1, "obx/offline", NULL, 0);
    CHECK(def->publish_batch(inst, &m, 1, &acc) == OBX_OK, "publish_batch status");
    CHECK(acc == OBX_UNAVAILABLE, "offline accept %d, want UNAVAILABLE", acc);
    CHECK(h->refusals == 1 && strstr(h->last_refusal, "not connected"), "refusal reason '%s'",
          h->last_refusal);
    CHECK(def->probe && def->probe(inst, 200) == OBX_UNAVAILABLE, "probe while down");
    CHECK(def->flush(inst, 10) == 0, "flush while nothing accepted");
    def->close(inst);
    def->close(inst); /* twice: harmless */
    def->destroy(inst);
    CHECK(h->completions == 0, "completions for refused messages: %lu", h->completions);
    printf("ok offline: create returned in %lld ms, publish refused UNAVAILABLE (\"%s\"), probe "
           "UNAVAILABLE, close twice\n",
           (long long)took, h->last_refusal);
    host_free(h);
}

static void sc_publish(const char *url, unsigned long n, const char *topic, int window)
{
    char err[256];
    fake_host *h = host_new(url);
    host_set(h, "max_in_flight", OBX_OPT_INT, NULL, window);
    host_set(h, "client_id_prefix", OBX_OPT_STRING, "mharness-", 0);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    unsigned long refused = 0;
    int64_t t0 = now_ms();
    unsigned long accepted = publish_range(inst, h, 0, n, topic, t0 + 300000, &refused);
    size_t left = def->flush(inst, 60000);
    int64_t took = now_ms() - t0;
    CHECK(accepted == n, "accepted %lu of %lu", accepted, n);
    CHECK(left == 0, "%zu still in flight after flush", left);
    CHECK(wait_completions(h, accepted, 1000), "completions %lu of %lu", h->completions, accepted);
    def->close(inst);
    pthread_mutex_lock(&h->mu);
    h->closed = 1;
    pthread_mutex_unlock(&h->mu);
    CHECK(h->ok == n, "OK completions %lu of %lu (retriable %lu permanent %lu, last '%s')", h->ok,
          n, h->retriable, h->permanent, h->last_detail);
    CHECK(h->doubles == 0, "%lu double completions", h->doubles);
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%lu completions after close", h->after_close);
    printf("ok publish %lu to %s: %lld ms (%.0f msg/s), window %d, %lu refusals (window full)\n", n,
           topic, (long long)took, took ? n * 1000.0 / took : 0.0, window, refused);
    host_free(h);
}

/* Invalid topics and headers. A 1.1 host (with refuse) gets them refused
 * PERMANENT with the reason, and a later event of a refused one's aggregate
 * refused too (it may not overtake it); a 1.0 host gets them accepted and
 * completed PERMANENT with the reason, as before. */
static void sc_invalid(const char *url, int with_refuse)
{
    char err[256];
    fake_host *h = host_new(url);
    if (!with_refuse)
        h->host.refuse = NULL;
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    /* tokens 0..8 are aggregates 0..8; token 51 is aggregate 1, like the wildcard topic */
    const char *topics[] = {"obx/inv/ok1", "obx/inv/#",         "obx/+/x",          "",
                            "obx/inv/ok2", "obx/inv/tab\there", "obx/inv/\xc3\x28", "obx/inv/hdr",
                            "obx/inv/ok3", "obx/inv/agg1"};
    const uint64_t tokens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 51};
    const obx_status want[] = {OBX_OK, OBX_PERMANENT, OBX_PERMANENT, OBX_PERMANENT,
                               OBX_OK, OBX_PERMANENT, OBX_PERMANENT, OBX_PERMANENT,
                               OBX_OK, OBX_RETRIABLE};
    enum { NT = sizeof topics / sizeof *topics };
    static const obx_header bad_hdr[] = {{"note", "line1\nline2"}};
    obx_message m[NT];
    obx_status acc[NT];
    int n = with_refuse ? NT : NT - 1;
    for (int i = 0; i < n; i++)
        make_msg(&m[i], tokens[i], topics[i], i == 7 ? bad_hdr : NULL, i == 7 ? 1 : 0);
    CHECK(def->publish_batch(inst, m, (size_t)n, acc) == OBX_OK, "publish_batch");
    CHECK(def->flush(inst, 10000) == 0, "flush");
    for (int i = 0; i < n; i++) {
        uint64_t t = tokens[i];
        if (with_refuse && want[i] != OBX_OK)
            CHECK(acc[i] == want[i] && h->count[t] == 0, "topic '%s': accept %d, %d completions",
                  topics[i], acc[i], h->count[t]);
        else
            CHECK(acc[i] == OBX_OK && h->count[t] == 1 && h->status[t] == want[i],
                  "topic '%s': accept %d, %d completions, status %d", topics[i], acc[i],
                  h->count[t], h->status[t]);
    }
    if (with_refuse) {
        CHECK(h->refusals == 7, "%lu refusals with a reason, want 7", h->refusals);
        CHECK(strstr(h->last_refusal, "earlier event of its aggregate") != NULL, "reason '%s'",
              h->last_refusal);
    } else {
        CHECK(strstr(h->last_detail, "invalid header") != NULL, "detail '%s'", h->last_detail);
    }
    /* the connection survived the refusals: publish again */
    make_msg(&m[0], 10, "obx/inv/after", NULL, 0);
    CHECK(def->publish_batch(inst, m, 1, acc) == OBX_OK && acc[0] == OBX_OK, "publish after");
    CHECK(def->flush(inst, 10000) == 0 && h->status[10] == OBX_OK, "publish after completes OK");
    def->destroy(inst);
    if (with_refuse)
        printf("ok invalid topics (wildcards, empty, control character, bad UTF-8) and a header "
               "with a newline refused PERMANENT with the reason, a later event of such an "
               "aggregate refused RETRIABLE (\"%s\"), neighbours OK\n",
               h->last_refusal);
    else
        printf("ok 1.0 host: invalid topics and headers accepted and completed PERMANENT with the "
               "reason, neighbours OK\n");
    host_free(h);
}

/* A batch larger than the window (one publish_batch call, as the relay
 * does): every message is accepted at once, the driver sends it in
 * window-sized slices as acknowledgements arrive, and its counters (the log
 * line at close) show that no batch waited for window space. */
static void sc_window(const char *url, unsigned long n, int window, const char *topic)
{
    char err[256];
    fake_host *h = host_new(url);
    host_set(h, "max_in_flight", OBX_OPT_INT, NULL, window);
    host_set(h, "client_id_prefix", OBX_OPT_STRING, "mharness-window-", 0);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    CHECK(def->probe && def->probe(inst, 5000) == OBX_OK, "probe while connected");
    static obx_message m[10000];
    static obx_status acc[10000];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}};
    if (n > 10000)
        n = 10000;
    unsigned long accepted = 0;
    int rounds = 3;
    for (int r = 0; r < rounds; r++) {
        for (unsigned long i = 0; i < n; i++)
            make_msg(&m[i], r * n + i, topic, hdrs, 1);
        CHECK(def->publish_batch(inst, m, n, acc) == OBX_OK, "publish_batch");
        for (unsigned long i = 0; i < n; i++)
            accepted += acc[i] == OBX_OK;
        CHECK(def->flush(inst, 60000) == 0, "flush round %d", r);
    }
    def->close(inst);
    CHECK(accepted == n * rounds, "accepted %lu of %lu", accepted, n * rounds);
    CHECK(h->ok == n * rounds, "OK %lu of %lu (last '%s')", h->ok, n * rounds, h->last_detail);
    CHECK(h->doubles == 0, "%lu double completions", h->doubles);
    /* the counters: "N batches, Q messages queued for room (deepest D), window full F
     * times, window waits W, connection waits C, ..., in flight limit L" */
    unsigned long long batches = 0, queued = 0, deepest = 0, full = 0, waits = 99, cwaits = 99;
    int limit = 0;
    const char *c = strstr(closed_line, "aborted; ");
    CHECK(c && sscanf(c,
                      "aborted; %llu batches, %llu messages queued for room (deepest %llu), "
                      "window full %llu times, window waits %llu, connection waits %llu, "
                      "out of order %*u, in flight limit %d",
                      &batches, &queued, &deepest, &full, &waits, &cwaits, &limit) == 7,
          "no counters in the close line '%s'", closed_line);
    CHECK(batches == (unsigned long long)rounds, "batches %llu", batches);
    CHECK(waits == 0, "a batch waited for window space %llu times", waits);
    CHECK(cwaits == 0, "a batch waited for the connection %llu times", cwaits);
    CHECK(limit <= window && limit > 0, "in flight limit %d (window %d)", limit, window);
    CHECK(queued >= (n - (unsigned long)limit) * rounds,
          "only %llu queued: the batch of %lu "
          "did not exceed the window",
          queued, n);
    CHECK(full > 0, "the window was never full");
    def->destroy(inst);
    printf("ok window: %d batches of %lu with max_in_flight %d (in flight limit %d): all accepted "
           "at once and acknowledged; %llu queued for room (deepest %llu), window full %llu times, "
           "0 batches waited for window space\n",
           rounds, n, window, limit, queued, deepest, full);
    host_free(h);
}

static void sc_close(const char *url)
{
    char err[256];
    fake_host *h = host_new(url);
    host_set(h, "max_in_flight", OBX_OPT_INT, NULL, 1000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    static obx_message m[1000];
    static obx_status acc[1000];
    for (int i = 0; i < 1000; i++)
        make_msg(&m[i], (uint64_t)i, "obx/close", NULL, 0);
    def->publish_batch(inst, m, 1000, acc);
    unsigned long accepted = 0;
    for (int i = 0; i < 1000; i++)
        accepted += acc[i] == OBX_OK;
    def->close(inst);
    pthread_mutex_lock(&h->mu);
    h->closed = 1;
    unsigned long at_close = h->completions;
    pthread_mutex_unlock(&h->mu);
    CHECK(at_close == accepted, "at close: %lu completions for %lu accepted", at_close, accepted);
    CHECK(h->doubles == 0, "%lu double completions", h->doubles);
    def->close(inst);
    usleep(500000);
    CHECK(h->after_close == 0, "%lu completions after close", h->after_close);
    CHECK(def->publish_batch(inst, m, 1, acc) == OBX_FATAL, "publish after close must be FATAL");
    def->destroy(inst);
    printf("ok close: %lu accepted, %lu OK + %lu aborted RETRIABLE, none after close\n", accepted,
           h->ok, h->retriable);
    host_free(h);
}

static void sc_two(const char *url)
{
    char err[256];
    fake_host *a = host_new(url), *b = host_new(url);
    obx_instance *ia = create(a, err, sizeof err), *ib = create(b, err, sizeof err);
    CHECK(ia && ib, "two instances: %s", err);
    if (ia && ib) {
        unsigned long r = 0;
        for (int round = 0; round < 3; round++) {
            uint64_t base = (uint64_t)round * 100;
            publish_range(ia, a, base, base + 100, "obx/two/a", now_ms() + 30000, &r);
            publish_range(ib, b, base, base + 100, "obx/two/b", now_ms() + 30000, &r);
            usleep(300000); /* a client-id clash would show as a disconnect here */
        }
        CHECK(def->flush(ia, 10000) == 0 && def->flush(ib, 10000) == 0, "flush");
        CHECK(a->ok == 300 && b->ok == 300, "two instances: ok %lu / %lu (last '%s' '%s')", a->ok,
              b->ok, a->last_detail, b->last_detail);
        printf("ok two instances at once: %lu + %lu acknowledged\n", a->ok, b->ok);
    }
    if (ia)
        def->destroy(ia);
    if (ib)
        def->destroy(ib);
    host_free(a);
    host_free(b);
}

/* Broker stopped and started while publishing: in-flight messages complete
 * RETRIABLE (once), new ones are refused while it is down, the driver
 * reconnects alone and every message is eventually acknowledged. */
static void sc_restart(const char *url, unsigned long n, const char *topic)
{
    const char *stop_cmd = getenv("MQTT_STOP_CMD"), *start_cmd = getenv("MQTT_START_CMD");
    char err[256];
    CHECK(stop_cmd && start_cmd, "MQTT_STOP_CMD and MQTT_START_CMD must be set");
    if (!stop_cmd || !start_cmd)
        return;
    fake_host *h = host_new(url);
    host_set(h, "max_in_flight", OBX_OPT_INT, NULL, 200);
    host_set(h, "reconnect_max_ms", OBX_OPT_INT, NULL, 1000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    /* like the relay: a message is offered again after a RETRIABLE
     * completion or refusal, in token order, until it completes OK */
    static obx_message batch[200];
    static obx_status acc[200];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}};
    unsigned char *state = calloc(n, 1); /* 0 to offer, 1 in flight, 2 acknowledged */
    unsigned long refused = 0, stopped_at = 0, started_at = 0, retried = 0, done = 0;
    int64_t deadline = now_ms() + 300000;
    int phase = 0; /* 0 before stop, 1 stopped, 2 restarted */
    while (done < n && now_ms() < deadline) {
        size_t nb = 0;
        pthread_mutex_lock(&h->mu);
        for (uint64_t t = 0; t < n; t++) {
            if (state[t] == 1 && h->count[t]) {
                if (h->count[t] > 1)
                    h->doubles++;
                if (h->status[t] == OBX_OK) {
                    state[t] = 2;
                    done++;
                } else {
                    state[t] = 0;
                    h->count[t] = 0; /* consumed: offer it again */
                    retried++;
                }
            }
            if (state[t] == 0 && nb < 200)
                make_msg(&batch[nb++], t, topic, hdrs, 1);
        }
        pthread_mutex_unlock(&h->mu);
        if (nb) {
            def->publish_batch(inst, batch, nb, acc);
            for (size_t i = 0; i < nb; i++) {
                if (acc[i] == OBX_OK)
                    state[batch[i].token] = 1;
                else
                    refused++;
            }
        }
        def->flush(inst, nb ? 5 : 20);
        if (nb && acc[0] != OBX_OK)
            usleep(10000); /* broker down: do not spin */
        if (phase == 0 && done >= n / 3) {
            stopped_at = done;
            CHECK(system(stop_cmd) == 0, "stop command failed");
            phase = 1;
        } else if (phase == 1 && refused > 0) {
            usleep(500000);
            CHECK(system(start_cmd) == 0, "start command failed");
            started_at = done;
            phase = 2;
        }
    }
    free(state);
    def->flush(inst, 10000);
    def->close(inst);
    pthread_mutex_lock(&h->mu);
    h->closed = 1;
    pthread_mutex_unlock(&h->mu);
    unsigned long okn = 0;
    for (uint64_t t = 0; t < n; t++)
        okn += h->status[t] == OBX_OK;
    CHECK(phase == 2, "never restarted the broker (phase %d)", phase);
    CHECK(okn == n, "%lu of %lu acknowledged after the restart", okn, n);
    CHECK(h->doubles == 0, "%lu double completions", h->doubles);
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%lu completions after close", h->after_close);
    (void)stopped_at;
    printf("ok restart: %lu acknowledged; stopped at %lu, restarted at %lu; %lu completed "
           "RETRIABLE or UNAVAILABLE and re-offered, %lu refused while down\n",
           okn, stopped_at, started_at, retried, refused);
    host_free(h);
}

/* publish tokens [from, to) as one batch; returns how many were accepted */
static size_t offer(obx_instance *inst, uint64_t from, uint64_t to, const char *topic)
{
    static obx_message m[1000];
    static obx_status acc[1000];
    size_t n = 0, ok = 0;
    for (uint64_t t = from; t < to && n < 1000; t++)
        make_msg(&m[n++], t, topic, NULL, 0);
    def->publish_batch(inst, m, n, acc);
    for (size_t i = 0; i < n; i++)
        ok += acc[i] == OBX_OK;
    return ok;
}

static int count_status(fake_host *h, uint64_t from, uint64_t to, obx_status st)
{
    int n = 0;
    pthread_mutex_lock(&h->mu);
    for (uint64_t t = from; t < to; t++)
        n += h->count[t] == 1 && h->status[t] == st;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* The broker frozen (SIGSTOP): publishes time out RETRIABLE, the late
 * acknowledgements after SIGCONT are ignored. Frozen then killed: in-flight
 * publishes complete RETRIABLE once; the driver reconnects by itself. */
static void sc_freeze(const char *url, const char *topic)
{
    const char *pid = getenv("MQTT_PID"), *start_cmd = getenv("MQTT_START_CMD");
    char err[256], cmd[128];
    CHECK(pid && start_cmd, "MQTT_PID and MQTT_START_CMD must be set");
    if (!pid || !start_cmd)
        return;
    fake_host *h = host_new(url);
    host_set(h, "publish_timeout_ms", OBX_OPT_INT, NULL, 1000);
    host_set(h, "reconnect_max_ms", OBX_OPT_INT, NULL, 500);
    host_set(h, "heartbeat_ms", OBX_OPT_INT, NULL, 60000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    CHECK(offer(inst, 0, 10, topic) == 10 && def->flush(inst, 30000) == 0, "warm-up");
    CHECK(count_status(h, 0, 10, OBX_OK) == 10, "warm-up acknowledged");

    snprintf(cmd, sizeof cmd, "kill -STOP %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(offer(inst, 100, 150, topic) == 50, "accept while frozen");
    CHECK(def->flush(inst, 30000) == 0, "flush: timeouts must complete everything");
    CHECK(count_status(h, 100, 150, OBX_RETRIABLE) == 50, "timed out RETRIABLE: %d of 50 ('%s')",
          count_status(h, 100, 150, OBX_RETRIABLE), h->last_detail);
    CHECK(strstr(h->last_detail, "no acknowledgement") != NULL, "detail '%s'", h->last_detail);
    snprintf(cmd, sizeof cmd, "kill -CONT %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    usleep(1000000); /* the broker now acknowledges the abandoned ones: must be ignored */
    CHECK(offer(inst, 200, 210, topic) == 10 && def->flush(inst, 30000) == 0, "after thaw");
    CHECK(count_status(h, 200, 210, OBX_OK) == 10, "after thaw acknowledged");
    printf("ok freeze: 50 publishes timed out RETRIABLE (\"%s\"), late acks ignored\n",
           h->last_detail);

    snprintf(cmd, sizeof cmd, "kill -STOP %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(offer(inst, 300, 350, topic) == 50, "accept while frozen (2)");
    snprintf(cmd, sizeof cmd, "kill -KILL %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(def->flush(inst, 30000) == 0, "flush after kill");
    CHECK(count_status(h, 300, 350, OBX_UNAVAILABLE) == 50, "lost UNAVAILABLE: %d of 50",
          count_status(h, 300, 350, OBX_UNAVAILABLE));
    char lost_detail[256];
    snprintf(lost_detail, sizeof lost_detail, "%s", h->last_detail);
    CHECK(offer(inst, 400, 401, topic) == 0, "publish while down must be refused");
    CHECK(system(start_cmd) == 0, "start command failed");
    int64_t end = now_ms() + 15000;
    uint64_t t = 500;
    while (now_ms() < end && !(offer(inst, t, t + 1, topic) == 1 && def->flush(inst, 5000) == 0))
        usleep(100000);
    CHECK(count_status(h, t, t + 1, OBX_OK) == 1, "no acknowledged publish after restart");
    def->close(inst);
    pthread_mutex_lock(&h->mu);
    h->closed = 1;
    pthread_mutex_unlock(&h->mu);
    CHECK(h->doubles == 0, "%lu double completions", h->doubles);
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%lu completions after close", h->after_close);
    printf("ok killed while frozen: 50 in flight completed UNAVAILABLE once (\"%s\"), reconnected "
           "alone, no double completion\n",
           lost_detail);
    host_free(h);
}

/* In order after a failure, against a broker whose ACL lets anonymous
 * clients publish to obx/ok/# only (PUBACK 0x87 elsewhere): once an event of
 * an aggregate fails, no later event of that aggregate may complete OK, even
 * though the broker acknowledges it; other aggregates are not affected. */
static void sc_order(const char *url)
{
    char err[256];
    fake_host *h = host_new(url);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    CHECK(def->flags & OBX_DRIVER_IN_ORDER, "the driver does not declare OBX_DRIVER_IN_ORDER");
    /* token % 50 is the aggregate: 1, 51, 101 and 151 are aggregate 1 */
    const uint64_t tokens[] = {0, 1, 51, 2, 101, 3, 151};
    const char *topics[] = {"obx/ok/a", "obx/denied/x", "obx/ok/b", "obx/ok/c",
                            "obx/ok/d", "obx/ok/e",     "obx/ok/f"};
    const obx_status want[] = {OBX_OK,        OBX_PERMANENT, OBX_RETRIABLE, OBX_OK,
                               OBX_RETRIABLE, OBX_OK,        OBX_RETRIABLE};
    enum { NT = sizeof tokens / sizeof *tokens };
    obx_message m[NT];
    obx_status acc[NT];
    for (int i = 0; i < NT; i++)
        make_msg(&m[i], tokens[i], topics[i], NULL, 0);
    CHECK(def->publish_batch(inst, m, NT, acc) == OBX_OK, "publish_batch");
    for (int i = 0; i < NT; i++)
        CHECK(acc[i] == OBX_OK, "accept[%d] = %d", i, acc[i]);
    CHECK(def->flush(inst, 10000) == 0, "flush");
    for (int i = 0; i < NT; i++)
        CHECK(h->count[tokens[i]] == 1 && h->status[tokens[i]] == want[i],
              "token %llu (%s): %d completions, status %d, want %d", (unsigned long long)tokens[i],
              topics[i], h->count[tokens[i]], h->status[tokens[i]], want[i]);
    def->close(inst);
    unsigned long long ooo = 0;
    const char *c = strstr(closed_line, "out of order ");
    CHECK(c && sscanf(c, "out of order %llu", &ooo) == 1, "no counter in '%s'", closed_line);
    def->destroy(inst);
    printf("ok in order: after a PUBACK 0x87 for one event of an aggregate, its 3 later events "
           "completed RETRIABLE (%llu of them acknowledged by the broker), other aggregates OK\n",
           ooo);
    host_free(h);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mharness DRIVER.so URL SCENARIO [ARGS]\n");
        return 2;
    }
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    obx_driver_entry_fn entry = (obx_driver_entry_fn)dlsym(so, OBX_DRIVER_ENTRY_SYMBOL);
    if (!entry || !(def = entry()) || def->magic != OBX_DRIVER_MAGIC) {
        fprintf(stderr, "not a driver: %s\n", argv[1]);
        return 2;
    }
    const char *url = argv[2], *sc = argv[3];
    if (strcmp(sc, "config") == 0)
        sc_config(url);
    else if (strcmp(sc, "offline") == 0)
        sc_offline();
    else if (strcmp(sc, "publish") == 0 && argc >= 6)
        sc_publish(url, strtoul(argv[4], NULL, 10), argv[5], argc >= 7 ? atoi(argv[6]) : 100);
    else if (strcmp(sc, "invalid") == 0) {
        sc_invalid(url, 1);
        sc_invalid(url, 0);
    } else if (strcmp(sc, "order") == 0)
        sc_order(url);
    else if (strcmp(sc, "window") == 0 && argc >= 7)
        sc_window(url, strtoul(argv[4], NULL, 10), atoi(argv[5]), argv[6]);
    else if (strcmp(sc, "close") == 0)
        sc_close(url);
    else if (strcmp(sc, "two") == 0)
        sc_two(url);
    else if (strcmp(sc, "freeze") == 0 && argc >= 5)
        sc_freeze(url, argv[4]);
    else if (strcmp(sc, "restart") == 0 && argc >= 6)
        sc_restart(url, strtoul(argv[4], NULL, 10), argv[5]);
    else {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
