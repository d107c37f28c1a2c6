/*
 * mharness: drives drivers/mqtt.so directly through the recording fake host
 * of tests/common (the relay's own host), against a real Mosquitto. It
 * checks the completion contract (exactly one completion per accepted
 * message, none after close) and the driver's own rules. Each scenario prints "ok ..." lines and
 * exits non-zero on failure.
 *
 *   mharness DRIVER.so URL config|offline|denied|publish N TOPIC|invalid|close|two|
 *                          restart N TOPIC|window N WINDOW TOPIC|order
 *
 * restart stops and starts the broker with $MQTT_STOP_CMD / $MQTT_START_CMD
 * while publishing.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_host.h"
#include "messages.h"

static const loaded_driver *drv;
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

/* ---- the recording host (tests/common), one per instance */
static fake_host *host_new(const char *url, size_t cap)
{
    fake_host *h = fh_new(drv, cap);
    h->watch_prefix = "closed "; /* the driver's counters, logged at close */
    if (url)
        fh_set(h, "url", url);
    return h;
}

static void host_set(fake_host *h, const char *name, const char *text)
{
    if (fh_set(h, name, text) < 0)
        exit(2);
}

static void host_set_int(fake_host *h, const char *name, int64_t value)
{
    if (fh_set_int(h, name, value) < 0)
        exit(2);
}

/* duplicate or unknown completions so far */
static size_t doubles(fake_host *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->duplicates + h->unknown;
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* ---- helpers */
static int64_t now_ms(void)
{
    return fh_now_ms();
}

/* Message TOKEN to TOPIC: aggregate agg-<token % 50>, payload {"n": token}
 * (increasing within each aggregate). */
static void make_msg(obx_message *m, msg_text *text, uint64_t token, const char *topic,
                     const obx_header *hdrs, size_t nh)
{
    msg_shape shape = {.destination = topic,
                       .headers = hdrs,
                       .header_count = nh,
                       .created_at_us = 1700000000123456};
    msg_make(&shape, token, text, m);
}

/* Publish tokens [from, to) in order, in batches; a refused (RETRIABLE:
 * window full) message and everything after it is offered again after a
 * short flush. */
static unsigned long publish_range(obx_instance *inst, fake_host *h, uint64_t from, uint64_t to,
                                   const char *topic, int64_t deadline, unsigned long *refused)
{
    static obx_message batch[500];
    static msg_text texts[500];
    static obx_status acc[500];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}, {"tenant", "t1"}};
    uint64_t next = from;
    unsigned long accepted = 0;
    while (next < to && now_ms() < deadline) {
        size_t n = 0;
        while (n < 500 && next + n < to) {
            make_msg(&batch[n], &texts[n], next + n, topic, hdrs, 2);
            n++;
        }
        obx_status st = fh_publish(h, inst, batch, n, acc);
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

/* ---- scenarios */
static obx_instance *create(fake_host *h, char *err, size_t errsz)
{
    return fh_create(h, err, errsz);
}

/* create without the host's option check: the driver's own refusals */
static obx_instance *create_unchecked(fake_host *h, char *err, size_t errsz)
{
    return fh_create_unchecked(h, err, errsz);
}

static void sc_config(const char *url)
{
    char err[256];
    struct {
        const char *what, *name, *value, *expect;
    } bad[] = {
        {"qos 0", "qos", "0", "qos"},
        {"qos 3", "qos", "3", "qos"},
        {"max_in_flight 0", "max_in_flight", "0", "max_in_flight"},
        {"tls on tcp", "tls_ca", "/nonexistent.pem", "ssl://"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        fake_host *h = host_new(url, 1);
        host_set(h, bad[k].name, bad[k].value);
        obx_instance *inst = create_unchecked(h, err, sizeof err);
        CHECK(!inst && strstr(err, bad[k].expect), "%s: instance %p, errstr '%s'", bad[k].what,
              (void *)inst, err);
        if (inst)
            def->destroy(inst);
        else
            printf("ok config %s refused: %s\n", bad[k].what, err);
        fh_free(h);
    }
    const char *bad_urls[] = {"http://127.0.0.1:1", "127.0.0.1:1883", NULL};
    for (int k = 0; k < 3; k++) {
        fake_host *h = host_new(bad_urls[k], 1);
        obx_instance *inst = create_unchecked(h, err, sizeof err);
        CHECK(!inst && err[0], "url %s: instance %p, errstr '%s'",
              bad_urls[k] ? bad_urls[k] : "(none)", (void *)inst, err);
        if (inst)
            def->destroy(inst);
        else
            printf("ok config url %s refused: %s\n", bad_urls[k] ? bad_urls[k] : "(none)", err);
        fh_free(h);
    }
    fake_host *h = host_new(url, 1);
    fh_property(h, "linger.ms=5");
    obx_instance *inst = create_unchecked(h, err, sizeof err);
    CHECK(!inst && strstr(err, "linger.ms"), "native property accepted: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config native property refused: %s\n", err);
    fh_free(h);

    /* the deprecated second-based options still work (converted to ms) */
    h = host_new(url, 1);
    host_set_int(h, "keepalive_s", 5);
    host_set_int(h, "connect_timeout_s", 3);
    inst = create_unchecked(h, err, sizeof err);
    CHECK(inst != NULL, "deprecated keepalive_s/connect_timeout_s refused: '%s'", err);
    if (inst) {
        def->destroy(inst);
        printf("ok config deprecated keepalive_s and connect_timeout_s accepted\n");
    }
    fh_free(h);
    h = host_new(url, 1);
    host_set_int(h, "connect_timeout_s", 0);
    inst = create_unchecked(h, err, sizeof err);
    CHECK(!inst && strstr(err, "connect_timeout_s"), "connect_timeout_s 0: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config deprecated option checked against its range: %s\n", err);
    fh_free(h);

    /* a password must never show up in an error */
    h = host_new(url, 1);
    host_set(h, "password", "s3cr3t-value");
    inst = create_unchecked(h, err, sizeof err);
    CHECK(!inst && !strstr(err, "s3cr3t"), "password without username: '%s'", err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok config password without username refused without leaking it\n");
    fh_free(h);
}

/* A broker that refuses every connection of this client (CONNACK 0x87 Not
 * authorized, 0x86, 0x85 or 0x8A): create fails with the broker's reason,
 * so the relay does not start and a reload is refused. */
static void sc_denied(const char *url)
{
    char err[256] = "";
    fake_host *h = host_new(url, 1);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(!inst && strstr(err, "refused the connection") && strstr(err, "CONNACK 0x8"),
          "create against a broker refusing anonymous clients: instance %p, errstr '%s'",
          (void *)inst, err);
    if (inst)
        def->destroy(inst);
    else
        printf("ok denied: create refused: %s\n", err);
    fh_free(h);
}

static void sc_offline(void)
{
    char err[256];
    fake_host *h = host_new("tcp://127.0.0.1:1", 2); /* nothing listens there */
    int64_t t0 = now_ms();
    obx_instance *inst = create(h, err, sizeof err);
    int64_t took = now_ms() - t0;
    CHECK(inst != NULL, "create with a broker down must succeed (lazy), errstr '%s'", err);
    if (!inst) {
        fh_free(h);
        return;
    }
    CHECK(took < 15000, "create blocked %lld ms", (long long)took);
    obx_message m;
    msg_text text;
    obx_status acc;
    make_msg(&m, &text, 1, "obx/offline", NULL, 0);
    CHECK(fh_publish(h, inst, &m, 1, &acc) == OBX_OK, "publish_batch status");
    CHECK(acc == OBX_UNAVAILABLE, "offline accept %d, want UNAVAILABLE", acc);
    CHECK(h->refusals == 1 && strstr(h->last_refusal, "not connected"), "refusal reason '%s'",
          h->last_refusal);
    CHECK(def->probe && def->probe(inst, 200) == OBX_UNAVAILABLE, "probe while down");
    CHECK(def->flush(inst, 10) == 0, "flush while nothing accepted");
    def->close(inst);
    def->close(inst); /* twice: harmless */
    def->destroy(inst);
    CHECK(h->completions == 0, "completions for refused messages: %zu", h->completions);
    printf("ok offline: create returned in %lld ms, publish refused UNAVAILABLE (\"%s\"), probe "
           "UNAVAILABLE, close twice\n",
           (long long)took, h->last_refusal);
    fh_free(h);
}

static void sc_publish(const char *url, unsigned long n, const char *topic, int window)
{
    char err[256];
    fake_host *h = host_new(url, n);
    host_set_int(h, "max_in_flight", window);
    host_set(h, "client_id_prefix", "mharness-");
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
    CHECK(fh_wait_completions(h, inst, accepted, 1000), "completions %zu of %lu", fh_completions(h),
          accepted);
    fh_close(h, inst);
    CHECK(h->by_status[OBX_OK] == n,
          "OK completions %zu of %lu (retriable %zu permanent %zu, last '%s')",
          h->by_status[OBX_OK], n, h->by_status[OBX_RETRIABLE], h->by_status[OBX_PERMANENT],
          h->last_detail);
    CHECK(doubles(h) == 0, "%zu double completions", doubles(h));
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%zu completions after close", h->after_close);
    printf("ok publish %lu to %s: %lld ms (%.0f msg/s), window %d, %lu refusals (window full)\n", n,
           topic, (long long)took, took ? n * 1000.0 / took : 0.0, window, refused);
    fh_free(h);
}

/* Invalid topics and headers. A 1.1 host (with refuse) gets them refused
 * PERMANENT with the reason, and a later event of a refused one's aggregate
 * refused too (it may not overtake it); a 1.0 host gets them accepted and
 * completed PERMANENT with the reason, as before. */
static void sc_invalid(const char *url, int with_refuse)
{
    char err[256];
    fake_host *h = host_new(url, 52);
    if (!with_refuse)
        h->ctx.host.refuse = NULL; /* an ABI 1.0 host */
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
    msg_text texts[NT];
    obx_status acc[NT];
    int n = with_refuse ? NT : NT - 1;
    for (int i = 0; i < n; i++)
        make_msg(&m[i], &texts[i], tokens[i], topics[i], i == 7 ? bad_hdr : NULL, i == 7 ? 1 : 0);
    CHECK(fh_publish(h, inst, m, (size_t)n, acc) == OBX_OK, "publish_batch");
    CHECK(def->flush(inst, 10000) == 0, "flush");
    for (int i = 0; i < n; i++) {
        uint64_t t = tokens[i];
        if (with_refuse && want[i] != OBX_OK)
            CHECK(acc[i] == want[i] && h->tok[t].completions == 0,
                  "topic '%s': accept %d, %u completions", topics[i], acc[i],
                  h->tok[t].completions);
        else
            CHECK(acc[i] == OBX_OK && h->tok[t].completions == 1 && h->tok[t].status == want[i],
                  "topic '%s': accept %d, %u completions, status %d", topics[i], acc[i],
                  h->tok[t].completions, h->tok[t].status);
    }
    if (with_refuse) {
        CHECK(h->refusals == 7, "%zu refusals with a reason, want 7", h->refusals);
        CHECK(strstr(h->last_refusal, "earlier event of its aggregate") != NULL, "reason '%s'",
              h->last_refusal);
    } else {
        CHECK(strstr(h->last_detail, "invalid header") != NULL, "detail '%s'", h->last_detail);
    }
    /* the connection survived the refusals: publish again */
    make_msg(&m[0], &texts[0], 10, "obx/inv/after", NULL, 0);
    CHECK(fh_publish(h, inst, m, 1, acc) == OBX_OK && acc[0] == OBX_OK, "publish after");
    CHECK(def->flush(inst, 10000) == 0 && h->tok[10].status == OBX_OK,
          "publish after completes OK");
    def->destroy(inst);
    if (with_refuse)
        printf("ok invalid topics (wildcards, empty, control character, bad UTF-8) and a header "
               "with a newline refused PERMANENT with the reason, a later event of such an "
               "aggregate refused RETRIABLE (\"%s\"), neighbours OK\n",
               h->last_refusal);
    else
        printf("ok 1.0 host: invalid topics and headers accepted and completed PERMANENT with the "
               "reason, neighbours OK\n");
    fh_free(h);
}

/* A batch larger than the window (one publish_batch call, as the relay
 * does): every message is accepted at once, the driver sends it in
 * window-sized slices as acknowledgements arrive, and its counters (the log
 * line at close) show that no batch waited for window space. */
static void sc_window(const char *url, unsigned long n, int window, const char *topic)
{
    char err[256];
    if (n > 10000)
        n = 10000;
    int rounds = 3;
    fake_host *h = host_new(url, n * rounds);
    host_set_int(h, "max_in_flight", window);
    host_set(h, "client_id_prefix", "mharness-window-");
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    CHECK(def->probe && def->probe(inst, 5000) == OBX_OK, "probe while connected");
    static obx_message m[10000];
    static msg_text texts[10000];
    static obx_status acc[10000];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}};
    unsigned long accepted = 0;
    for (int r = 0; r < rounds; r++) {
        for (unsigned long i = 0; i < n; i++)
            make_msg(&m[i], &texts[i], r * n + i, topic, hdrs, 1);
        CHECK(fh_publish(h, inst, m, n, acc) == OBX_OK, "publish_batch");
        for (unsigned long i = 0; i < n; i++)
            accepted += acc[i] == OBX_OK;
        CHECK(def->flush(inst, 60000) == 0, "flush round %d", r);
    }
    def->close(inst);
    CHECK(accepted == n * rounds, "accepted %lu of %lu", accepted, n * rounds);
    CHECK(h->by_status[OBX_OK] == n * rounds, "OK %zu of %lu (last '%s')", h->by_status[OBX_OK],
          n * rounds, h->last_detail);
    CHECK(doubles(h) == 0, "%zu double completions", doubles(h));
    /* the counters: "N batches, Q messages queued for room (deepest D), window full F
     * times, window waits W, connection waits C, ..., in flight limit L" */
    unsigned long long batches = 0, queued = 0, deepest = 0, full = 0, waits = 99, cwaits = 99;
    int limit = 0;
    const char *c = strstr(h->watched, "aborted; ");
    CHECK(c && sscanf(c,
                      "aborted; %llu batches, %llu messages queued for room (deepest %llu), "
                      "window full %llu times, window waits %llu, connection waits %llu, "
                      "out of order %*u, in flight limit %d",
                      &batches, &queued, &deepest, &full, &waits, &cwaits, &limit) == 7,
          "no counters in the close line '%s'", h->watched);
    CHECK(batches == (unsigned long long)rounds, "batches %llu", batches);
    CHECK(waits == 0, "a batch waited for window space %llu times", waits);
    CHECK(cwaits == 0, "a batch waited for the connection %llu times", cwaits);
    CHECK(limit <= window && limit > 0, "in flight limit %d (window %d)", limit, window);
    CHECK(queued >= (n - (unsigned long)limit) * rounds,
          "only %llu queued: the batch of %lu "
          "did not exceed the window",
          queued, n);
    /* no check that the window filled: when the broker acknowledges as fast as the
     * pump sends, it never does (the queued count above says the batch exceeded it) */
    def->destroy(inst);
    printf("ok window: %d batches of %lu with max_in_flight %d (in flight limit %d): all accepted "
           "at once and acknowledged; %llu queued for room (deepest %llu), window full %llu times, "
           "0 batches waited for window space\n",
           rounds, n, window, limit, queued, deepest, full);
    fh_free(h);
}

static void sc_close(const char *url)
{
    char err[256];
    fake_host *h = host_new(url, 1000);
    host_set_int(h, "max_in_flight", 1000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    static obx_message m[1000];
    static msg_text texts[1000];
    static obx_status acc[1000];
    for (int i = 0; i < 1000; i++)
        make_msg(&m[i], &texts[i], (uint64_t)i, "obx/close", NULL, 0);
    fh_publish(h, inst, m, 1000, acc);
    unsigned long accepted = 0;
    for (int i = 0; i < 1000; i++)
        accepted += acc[i] == OBX_OK;
    fh_close(h, inst);
    size_t at_close = fh_completions(h);
    CHECK(at_close == accepted, "at close: %zu completions for %lu accepted", at_close, accepted);
    CHECK(doubles(h) == 0, "%zu double completions", doubles(h));
    def->close(inst);
    usleep(500000);
    CHECK(h->after_close == 0, "%zu completions after close", h->after_close);
    CHECK(fh_publish(h, inst, m, 1, acc) == OBX_FATAL, "publish after close must be FATAL");
    def->destroy(inst);
    printf("ok close: %lu accepted, %zu OK + %zu aborted RETRIABLE, none after close\n", accepted,
           h->by_status[OBX_OK], h->by_status[OBX_RETRIABLE]);
    fh_free(h);
}

static void sc_two(const char *url)
{
    char err[256];
    fake_host *a = host_new(url, 300), *b = host_new(url, 300);
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
        size_t aok = fh_count_status(a, 0, 300, OBX_OK), bok = fh_count_status(b, 0, 300, OBX_OK);
        CHECK(aok == 300 && bok == 300, "two instances: ok %zu / %zu (last '%s' '%s')", aok, bok,
              a->last_detail, b->last_detail);
        printf("ok two instances at once: %zu + %zu acknowledged\n", aok, bok);
    }
    if (ia)
        def->destroy(ia);
    if (ib)
        def->destroy(ib);
    fh_free(a);
    fh_free(b);
}

/* Broker stopped and started while publishing: in-flight messages complete
 * UNAVAILABLE (once), new ones are refused while it is down, the driver
 * reconnects alone and every message is eventually acknowledged. */
static void sc_restart(const char *url, unsigned long n, const char *topic)
{
    const char *stop_cmd = getenv("MQTT_STOP_CMD"), *start_cmd = getenv("MQTT_START_CMD");
    char err[256];
    CHECK(stop_cmd && start_cmd, "MQTT_STOP_CMD and MQTT_START_CMD must be set");
    if (!stop_cmd || !start_cmd)
        return;
    fake_host *h = host_new(url, n);
    host_set_int(h, "max_in_flight", 200);
    host_set_int(h, "reconnect_max_ms", 1000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    /* like the relay: a message is offered again after a RETRIABLE
     * completion or refusal, in token order, until it completes OK */
    static obx_message batch[200];
    static msg_text texts[200];
    static obx_status acc[200];
    static const obx_header hdrs[] = {{"traceparent", "00-abc-def-01"}};
    unsigned char *state = calloc(n, 1); /* 0 to offer, 1 in flight, 2 acknowledged */
    unsigned long refused = 0, stopped_at = 0, started_at = 0, retried = 0, done = 0;
    int64_t deadline = now_ms() + 300000;
    int phase = 0; /* 0 before stop, 1 stopped, 2 restarted */
    while (done < n && now_ms() < deadline) {
        size_t nb = 0;
        pthread_mutex_lock(&h->lock);
        for (uint64_t t = 0; t < n; t++) {
            if (state[t] == 1 && h->tok[t].completions) {
                if (h->tok[t].status == OBX_OK) {
                    state[t] = 2;
                    done++;
                } else {
                    state[t] = 0;
                    h->tok[t].completions = 0; /* consumed: offer it again */
                    retried++;
                }
            }
            if (state[t] == 0 && nb < 200)
                make_msg(&batch[nb], &texts[nb], t, topic, hdrs, 1), nb++;
        }
        pthread_mutex_unlock(&h->lock);
        if (nb) {
            fh_publish(h, inst, batch, nb, acc);
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
    fh_close(h, inst);
    unsigned long okn = 0;
    for (uint64_t t = 0; t < n; t++)
        okn += h->tok[t].status == OBX_OK && h->tok[t].completions;
    CHECK(phase == 2, "never restarted the broker (phase %d)", phase);
    CHECK(okn == n, "%lu of %lu acknowledged after the restart", okn, n);
    CHECK(doubles(h) == 0, "%zu double completions", doubles(h));
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%zu completions after close", h->after_close);
    (void)stopped_at;
    printf("ok restart: %lu acknowledged; stopped at %lu, restarted at %lu; %lu completed "
           "RETRIABLE or UNAVAILABLE and re-offered, %lu refused while down\n",
           okn, stopped_at, started_at, retried, refused);
    fh_free(h);
}

/* publish tokens [from, to) as one batch; returns how many were accepted */
static size_t offer(obx_instance *inst, fake_host *h, uint64_t from, uint64_t to, const char *topic)
{
    static obx_message m[1000];
    static msg_text texts[1000];
    static obx_status acc[1000];
    size_t n = 0, ok = 0;
    for (uint64_t t = from; t < to && n < 1000; t++, n++)
        make_msg(&m[n], &texts[n], t, topic, NULL, 0);
    fh_publish(h, inst, m, n, acc);
    for (size_t i = 0; i < n; i++)
        ok += acc[i] == OBX_OK;
    return ok;
}

static int count_status(fake_host *h, uint64_t from, uint64_t to, obx_status st)
{
    return (int)fh_count_status(h, from, to, st);
}

/* The broker frozen (SIGSTOP): publishes time out UNAVAILABLE (pushback: no
 * attempt), the late acknowledgements after SIGCONT are ignored. Frozen then
 * killed: in-flight publishes complete UNAVAILABLE once; the driver
 * reconnects by itself. */
static void sc_freeze(const char *url, const char *topic)
{
    const char *pid = getenv("MQTT_PID"), *start_cmd = getenv("MQTT_START_CMD");
    char err[256], cmd[128];
    CHECK(pid && start_cmd, "MQTT_PID and MQTT_START_CMD must be set");
    if (!pid || !start_cmd)
        return;
    fake_host *h = host_new(url, 501);
    host_set_int(h, "publish_timeout_ms", 1000);
    host_set_int(h, "reconnect_max_ms", 500);
    host_set_int(h, "heartbeat_ms", 60000);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    CHECK(offer(inst, h, 0, 10, topic) == 10 && def->flush(inst, 30000) == 0, "warm-up");
    CHECK(count_status(h, 0, 10, OBX_OK) == 10, "warm-up acknowledged");

    snprintf(cmd, sizeof cmd, "kill -STOP %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(offer(inst, h, 100, 150, topic) == 50, "accept while frozen");
    CHECK(def->flush(inst, 30000) == 0, "flush: timeouts must complete everything");
    CHECK(count_status(h, 100, 150, OBX_UNAVAILABLE) == 50,
          "timed out UNAVAILABLE: %d of 50 ('%s')", count_status(h, 100, 150, OBX_UNAVAILABLE),
          h->last_detail);
    CHECK(strstr(h->last_detail, "no acknowledgement") != NULL, "detail '%s'", h->last_detail);
    snprintf(cmd, sizeof cmd, "kill -CONT %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    usleep(1000000); /* the broker now acknowledges the abandoned ones: must be ignored */
    CHECK(offer(inst, h, 200, 210, topic) == 10 && def->flush(inst, 30000) == 0, "after thaw");
    CHECK(count_status(h, 200, 210, OBX_OK) == 10, "after thaw acknowledged");
    printf("ok freeze: 50 publishes timed out UNAVAILABLE (\"%s\"), late acks ignored\n",
           h->last_detail);

    snprintf(cmd, sizeof cmd, "kill -STOP %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(offer(inst, h, 300, 350, topic) == 50, "accept while frozen (2)");
    snprintf(cmd, sizeof cmd, "kill -KILL %s", pid);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(def->flush(inst, 30000) == 0, "flush after kill");
    CHECK(count_status(h, 300, 350, OBX_UNAVAILABLE) == 50, "lost UNAVAILABLE: %d of 50",
          count_status(h, 300, 350, OBX_UNAVAILABLE));
    char lost_detail[256];
    snprintf(lost_detail, sizeof lost_detail, "%s", h->last_detail);
    CHECK(offer(inst, h, 400, 401, topic) == 0, "publish while down must be refused");
    CHECK(system(start_cmd) == 0, "start command failed");
    int64_t end = now_ms() + 15000;
    uint64_t t = 500;
    while (now_ms() < end && !(offer(inst, h, t, t + 1, topic) == 1 && def->flush(inst, 5000) == 0))
        usleep(100000);
    CHECK(count_status(h, t, t + 1, OBX_OK) == 1, "no acknowledged publish after restart");
    fh_close(h, inst);
    CHECK(doubles(h) == 0, "%zu double completions", doubles(h));
    def->destroy(inst);
    usleep(200000);
    CHECK(h->after_close == 0, "%zu completions after close", h->after_close);
    printf("ok killed while frozen: 50 in flight completed UNAVAILABLE once (\"%s\"), reconnected "
           "alone, no double completion\n",
           lost_detail);
    fh_free(h);
}

/* In order after a failure, against a broker whose ACL lets anonymous
 * clients publish to obx/ok/# only (PUBACK 0x87 elsewhere): once an event of
 * an aggregate fails, no later event of that aggregate may complete OK, even
 * though the broker acknowledges it; other aggregates are not affected. */
static void sc_order(const char *url)
{
    char err[256];
    fake_host *h = host_new(url, 152);
    obx_instance *inst = create(h, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    /* the rule OBX_DRIVER_IN_ORDER promises (see mqtt.c) */
    /* token % 50 is the aggregate: 1, 51, 101 and 151 are aggregate 1 */
    const uint64_t tokens[] = {0, 1, 51, 2, 101, 3, 151};
    const char *topics[] = {"obx/ok/a", "obx/denied/x", "obx/ok/b", "obx/ok/c",
                            "obx/ok/d", "obx/ok/e",     "obx/ok/f"};
    const obx_status want[] = {OBX_OK,        OBX_PERMANENT, OBX_RETRIABLE, OBX_OK,
                               OBX_RETRIABLE, OBX_OK,        OBX_RETRIABLE};
    enum { NT = sizeof tokens / sizeof *tokens };
    obx_message m[NT];
    msg_text texts[NT];
    obx_status acc[NT];
    for (int i = 0; i < NT; i++)
        make_msg(&m[i], &texts[i], tokens[i], topics[i], NULL, 0);
    CHECK(fh_publish(h, inst, m, NT, acc) == OBX_OK, "publish_batch");
    for (int i = 0; i < NT; i++)
        CHECK(acc[i] == OBX_OK, "accept[%d] = %d", i, acc[i]);
    CHECK(def->flush(inst, 10000) == 0, "flush");
    for (int i = 0; i < NT; i++)
        CHECK(h->tok[tokens[i]].completions == 1 && h->tok[tokens[i]].status == want[i],
              "token %llu (%s): %d completions, status %d, want %d", (unsigned long long)tokens[i],
              topics[i], h->tok[tokens[i]].completions, h->tok[tokens[i]].status, want[i]);
    def->close(inst);
    unsigned long long ooo = 0;
    const char *c = strstr(h->watched, "out of order ");
    CHECK(c && sscanf(c, "out of order %llu", &ooo) == 1, "no counter in '%s'", h->watched);
    def->destroy(inst);
    printf("ok in order: after a PUBACK 0x87 for one event of an aggregate, its 3 later events "
           "completed RETRIABLE (%llu of them acknowledged by the broker), other aggregates OK\n",
           ooo);
    fh_free(h);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mharness DRIVER.so URL SCENARIO [ARGS]\n");
        return 2;
    }
    char err[1024];
    loaded_driver *loaded = fh_load(argv[1], err, sizeof err);
    if (!loaded) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    drv = loaded;
    def = &drv->def;
    const char *url = argv[2], *sc = argv[3];
    int known = 1;
    if (strcmp(sc, "config") == 0)
        sc_config(url);
    else if (strcmp(sc, "offline") == 0)
        sc_offline();
    else if (strcmp(sc, "denied") == 0)
        sc_denied(url);
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
    else
        known = 0;
    loader_close(loaded);
    if (!known) {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
