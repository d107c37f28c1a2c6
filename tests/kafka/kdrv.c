/*
 * kdrv: drives the Kafka driver .so through a recording fake host, the way
 * the relay does, and checks the ABI's completion contract on the way:
 * exactly one completion per accepted message, none after close.
 *
 *   kdrv SCENARIO -d DRIVER.so -b BOOTSTRAP [-t TOPIC] [-n N] [-e EVENTS_FILE]
 *        [-o option=value]... [-p property=value]... [-K KMOCK_PID]
 *
 * Scenarios: basic, abort, timeout, badprop, oversize, faults, recover, probe (see below).
 * -e writes the event ids completed OK, one a line, for the consumer check.
 * Exit 0 on success; every failed check prints "FAIL: ..." and exits 1.
 * The fake host is an ABI 1.1 host: it has refuse (a refusal's reason is
 * kept like a completion's detail) and checks option values against the
 * driver's option_specs before create, as the relay does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"

#define MAX_KV 32

typedef struct kv {
    char *key, *value;
} kv;

typedef struct fake_host {
    obx_host host;
    const obx_driver_def *def;
    kv opts[MAX_KV], props[MAX_KV];
    int nopts, nprops;
    pthread_mutex_t mu;
    size_t cap;          /* tokens 0..cap-1 */
    unsigned char *done; /* completions per token */
    obx_status *status;
    char (*detail)[160];
    size_t completions, dups, late, unknown, refusals;
    int closed;
    long long last_ok_ms, longest_no_ok_ms; /* OK completions over time (recover) */
} fake_host;

static const obx_driver_def *def;
static int failures;

static void failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ fake host */
static void h_log(void *ctx, obx_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    va_list ap;
    (void)ctx;
    if (level == OBX_LOG_DEBUG)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[driver %s] ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *h_find(void *ctx, const char *name, obx_option_type type)
{
    fake_host *fh = ctx;
    for (int i = 0; i < fh->nopts; i++) {
        if (strcmp(fh->opts[i].key, name))
            continue;
        for (const obx_option *o = fh->def->options; o && o->name; o++)
            if (!strcmp(o->name, name) && o->type == type)
                return fh->opts[i].value;
    }
    return NULL;
}

static int h_string(void *ctx, const char *name, const char **out)
{
    const char *v = h_find(ctx, name, OBX_OPT_STRING);
    if (v)
        *out = v;
    return v != NULL;
}

static int h_int(void *ctx, const char *name, int64_t *out)
{
    const char *v = h_find(ctx, name, OBX_OPT_INT);
    if (v)
        *out = atoll(v);
    return v != NULL;
}

static int h_bool(void *ctx, const char *name, int *out)
{
    const char *v = h_find(ctx, name, OBX_OPT_BOOL);
    if (v)
        *out = !strcmp(v, "true");
    return v != NULL;
}

static int h_double(void *ctx, const char *name, double *out)
{
    const char *v = h_find(ctx, name, OBX_OPT_DOUBLE);
    if (v)
        *out = atof(v);
    return v != NULL;
}

static int h_property(void *ctx, size_t index, const char **key, const char **value)
{
    fake_host *fh = ctx;
    if (index >= (size_t)fh->nprops)
        return 0;
    *key = fh->props[index].key;
    *value = fh->props[index].value;
    return 1;
}

static void h_complete(void *ctx, uint64_t token, obx_status status, int code, const char *detail)
{
    fake_host *fh = ctx;
    (void)code;
    pthread_mutex_lock(&fh->mu);
    if (fh->closed)
        fh->late++;
    if (token >= fh->cap) {
        fh->unknown++;
    } else {
        if (fh->done[token])
            fh->dups++;
        fh->done[token]++;
        fh->status[token] = status;
        if (status == OBX_OK) {
            long long t = now_ms();
            if (fh->last_ok_ms && t - fh->last_ok_ms > fh->longest_no_ok_ms)
                fh->longest_no_ok_ms = t - fh->last_ok_ms;
            fh->last_ok_ms = t;
        }
        snprintf(fh->detail[token], sizeof fh->detail[token], "%s", detail ? detail : "");
    }
    fh->completions++;
    pthread_mutex_unlock(&fh->mu);
}

/* A refusal at publish: kept like a completion's detail, but no completion counts. */
static void h_refuse(void *ctx, uint64_t token, int code, const char *detail)
{
    fake_host *fh = ctx;
    (void)code;
    pthread_mutex_lock(&fh->mu);
    fh->refusals++;
    if (token < fh->cap)
        snprintf(fh->detail[token], sizeof fh->detail[token], "%s", detail ? detail : "");
    pthread_mutex_unlock(&fh->mu);
}

/* The host's check of the options against the driver's option_specs: 0, or
 * -1 with a reason naming the option (the relay refuses before create). */
static int spec_check(const fake_host *fh, char *err, size_t err_size)
{
    for (int k = 0; k < fh->nopts; k++) {
        for (size_t i = 0; def->option_specs && def->options[i].name; i++) {
            const obx_option_spec *sp = &def->option_specs[i];
            const char *name = def->options[i].name, *v = fh->opts[k].value;
            if (strcmp(name, fh->opts[k].key))
                continue;
            if (def->options[i].type == OBX_OPT_INT && sp->min < sp->max &&
                (atof(v) < sp->min || atof(v) > sp->max)) {
                snprintf(err, err_size, "option %s = %s: out of range %.0f..%.0f", name, v, sp->min,
                         sp->max);
                return -1;
            }
            int found = !sp->choices;
            for (const char *const *c = sp->choices; c && *c; c++)
                found |= !strcmp(*c, v);
            if (!found) {
                snprintf(err, err_size, "option %s = \"%s\": not one of the choices", name, v);
                return -1;
            }
        }
    }
    return 0;
}

/* create as the relay calls it: after the spec check. */
static obx_instance *host_create(fake_host *fh, char *err, size_t err_size)
{
    if (spec_check(fh, err, err_size))
        return NULL;
    return def->create(&fh->host, err, err_size);
}

static void kv_add(kv *arr, int *n, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || *n >= MAX_KV) {
        fprintf(stderr, "kdrv: bad key=value \"%s\"\n", spec);
        exit(2);
    }
    arr[*n].key = strndup(spec, (size_t)(eq - spec));
    arr[*n].value = strdup(eq + 1);
    (*n)++;
}

static fake_host *fake_new(size_t cap)
{
    fake_host *fh = calloc(1, sizeof *fh);
    fh->def = def;
    pthread_mutex_init(&fh->mu, NULL);
    fh->cap = cap;
    fh->done = calloc(cap ? cap : 1, 1);
    fh->status = calloc(cap ? cap : 1, sizeof *fh->status);
    fh->detail = calloc(cap ? cap : 1, sizeof *fh->detail);
    fh->host = (obx_host){.struct_size = sizeof(obx_host),
                          .host_ctx = fh,
                          .log = h_log,
                          .get_string = h_string,
                          .get_int = h_int,
                          .get_bool = h_bool,
                          .get_double = h_double,
                          .get_property = h_property,
                          .complete = h_complete,
                          .refuse = h_refuse};
    return fh;
}

static void fake_free(fake_host *fh)
{
    for (int i = 0; i < fh->nopts; i++)
        free(fh->opts[i].key), free(fh->opts[i].value);
    for (int i = 0; i < fh->nprops; i++)
        free(fh->props[i].key), free(fh->props[i].value);
    free(fh->done);
    free(fh->status);
    free(fh->detail);
    free(fh);
}

static size_t fake_completions(fake_host *fh)
{
    pthread_mutex_lock(&fh->mu);
    size_t n = fh->completions;
    pthread_mutex_unlock(&fh->mu);
    return n;
}

/* ------------------------------------------------------------ messages */
typedef struct msgset {
    size_t n;
    obx_message *m;
    char (*event_id)[48];
    char (*agg)[32];
    char (*seq)[24];
    char (*payload)[64];
    obx_header (*hdrs)[2];
} msgset;

static unsigned run_id;

static void msgs_init(msgset *s, size_t n, const char *topic, unsigned salt)
{
    s->n = n;
    s->m = calloc(n, sizeof *s->m);
    s->event_id = calloc(n, sizeof *s->event_id);
    s->agg = calloc(n, sizeof *s->agg);
    s->seq = calloc(n, sizeof *s->seq);
    s->payload = calloc(n, sizeof *s->payload);
    s->hdrs = calloc(n, sizeof *s->hdrs);
    for (size_t i = 0; i < n; i++) {
        obx_message *m = &s->m[i];
        snprintf(s->event_id[i], sizeof s->event_id[i], "%08x-%04x-4000-8000-%012zx", run_id,
                 salt & 0xffffu, i & 0xffffffffffffu);
        snprintf(s->agg[i], sizeof s->agg[i], "agg-%zu", i % 50);
        snprintf(s->seq[i], sizeof s->seq[i], "%zu", i);
        snprintf(s->payload[i], sizeof s->payload[i], "{\"n\": %zu}", i);
        s->hdrs[i][0] =
            (obx_header){"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"};
        s->hdrs[i][1] = (obx_header){"seq", s->seq[i]};
        *m = (obx_message){.token = i,
                           .event_id = s->event_id[i],
                           .event_type = "order.created",
                           .aggregate_type = "Order",
                           .aggregate_id = s->agg[i],
                           .destination = topic,
                           .payload = s->payload[i],
                           .payload_len = strlen(s->payload[i]),
                           .content_type = "application/json",
                           .created_at_us = (int64_t)time(NULL) * 1000000 + 123456,
                           .headers = s->hdrs[i],
                           .header_count = 2,
                           .attempt = 1};
    }
}

static void msgs_free(msgset *s)
{
    free(s->m);
    free(s->event_id);
    free(s->agg);
    free(s->seq);
    free(s->payload);
    free(s->hdrs);
}

/* Publishes a batch; returns how many were accepted. */
static size_t publish(obx_instance *inst, fake_host *fh, const obx_message *msgs, size_t count,
                      obx_status *accept)
{
    size_t ok = 0;
    obx_status rc = def->publish_batch(inst, msgs, count, accept);
    if (rc != OBX_OK)
        failf("publish_batch returned %d", rc);
    for (size_t i = 0; i < count; i++)
        ok += accept[i] == OBX_OK;
    (void)fh;
    return ok;
}

static void wait_completions(obx_instance *inst, fake_host *fh, size_t want, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    while (fake_completions(fh) < want && now_ms() < deadline)
        def->poll(inst, 100);
}

static void write_events(const char *path, fake_host *fh, const msgset *s)
{
    FILE *fp;
    if (!path)
        return;
    fp = fopen(path, "a");
    if (!fp) {
        failf("cannot write %s", path);
        return;
    }
    for (size_t i = 0; i < s->n && i < fh->cap; i++)
        if (fh->done[i] && fh->status[i] == OBX_OK)
            fprintf(fp, "%s\n", s->event_id[i]);
    fclose(fp);
}

static void close_checked(obx_instance *inst, fake_host *fh, const char *what)
{
    def->close(inst);
    pthread_mutex_lock(&fh->mu);
    fh->closed = 1;
    pthread_mutex_unlock(&fh->mu);
    def->close(inst); /* twice: harmless */
    def->poll(inst, 50);
    if (def->flush(inst, 10) != 0)
        failf("%s: flush after close reports messages in flight", what);
    def->destroy(inst);
    if (fh->late)
        failf("%s: %zu completions after close", what, fh->late);
    if (fh->dups)
        failf("%s: %zu duplicate completions", what, fh->dups);
    if (fh->unknown)
        failf("%s: %zu completions with unknown tokens", what, fh->unknown);
}

static obx_instance *create_ok(fake_host *fh)
{
    char err[512] = "";
    obx_instance *inst = host_create(fh, err, sizeof err);
    if (!inst) {
        fprintf(stderr, "FAIL: create: %s\n", err);
        exit(1);
    }
    return inst;
}

/* ------------------------------------------------------------ scenarios */
typedef struct args {
    const char *bootstrap, *topic, *events;
    size_t n;
    fake_host *proto; /* options and properties from the command line */
    pid_t kmock;
} args;

static fake_host *fake_from(const args *a, size_t cap)
{
    fake_host *fh = fake_new(cap);
    char spec[1024];
    snprintf(spec, sizeof spec, "bootstrap_servers=%s", a->bootstrap);
    kv_add(fh->opts, &fh->nopts, spec);
    for (int i = 0; i < a->proto->nopts; i++) {
        snprintf(spec, sizeof spec, "%s=%s", a->proto->opts[i].key, a->proto->opts[i].value);
        kv_add(fh->opts, &fh->nopts, spec);
    }
    for (int i = 0; i < a->proto->nprops; i++) {
        snprintf(spec, sizeof spec, "%s=%s", a->proto->props[i].key, a->proto->props[i].value);
        kv_add(fh->props, &fh->nprops, spec);
    }
    return fh;
}

static void expect_all(fake_host *fh, size_t n, obx_status want, const char *detail_part,
                       const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (fh->done[i] != 1 || fh->status[i] != want ||
            (detail_part && !strstr(fh->detail[i], detail_part))) {
            if (bad++ < 3)
                failf(
                    "%s: token %zu: %d completions, status %d, detail \"%s\" (want status %d%s%s)",
                    what, i, fh->done[i], fh->status[i], fh->detail[i], want,
                    detail_part ? " with " : "", detail_part ? detail_part : "");
        }
    }
    if (bad)
        failf("%s: %zu of %zu messages not as expected", what, bad, n);
}

/* basic: batches of 0, 1 and many; two instances at once; all OK exactly once. */
static void scenario_basic(const args *a)
{
    msgset s, s2;
    size_t n = a->n ? a->n : 2000, accepted = 0;
    fake_host *fh = fake_from(a, n), *fh2 = fake_from(a, 10);
    obx_instance *inst = create_ok(fh), *inst2 = create_ok(fh2);
    obx_status *accept = calloc(n, sizeof *accept);
    long long t0 = now_ms();

    msgs_init(&s, n, a->topic, 1);
    msgs_init(&s2, 10, a->topic, 2);
    if (def->publish_batch(inst, s.m, 0, accept) != OBX_OK)
        failf("empty batch refused");
    accepted += publish(inst, fh, s.m, 1, accept);
    for (size_t i = 1; i < n; i += 500) {
        size_t c = n - i < 500 ? n - i : 500;
        accepted += publish(inst, fh, s.m + i, c, accept);
        def->poll(inst, 0);
    }
    if (publish(inst2, fh2, s2.m, 10, accept) != 10)
        failf("second instance refused messages");
    if (accepted != n)
        failf("basic: accepted %zu of %zu", accepted, n);
    wait_completions(inst, fh, n, 30000);
    wait_completions(inst2, fh2, 10, 30000);
    if (def->flush(inst, 5000) != 0 || def->flush(inst2, 5000) != 0)
        failf("basic: flush reports messages still in flight");
    expect_all(fh, n, OBX_OK, NULL, "basic");
    expect_all(fh2, 10, OBX_OK, NULL, "basic (second instance)");
    fprintf(stderr, "basic: %zu + 10 messages acknowledged in %lld ms\n", n, now_ms() - t0);
    write_events(a->events, fh, &s);
    write_events(a->events, fh2, &s2);
    close_checked(inst, fh, "basic");
    close_checked(inst2, fh2, "basic (second instance)");
    fake_free(fh);
    fake_free(fh2);
    msgs_free(&s);
    msgs_free(&s2);
    free(accept);
}

/* abort: nothing can be delivered; close completes everything RETRIABLE, "aborted". */
static void scenario_abort(const args *a)
{
    msgset s;
    size_t n = a->n ? a->n : 200, left;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    obx_status *accept = calloc(n, sizeof *accept);

    msgs_init(&s, n, a->topic, 3);
    if (publish(inst, fh, s.m, n, accept) != n)
        failf("abort: not all accepted");
    left = def->flush(inst, 300);
    if (left != n)
        failf("abort: flush(300) says %zu in flight, want %zu", left, n);
    long long t0 = now_ms();
    def->close(inst);
    fprintf(stderr, "abort: close completed %zu messages in %lld ms\n", fake_completions(fh),
            now_ms() - t0);
    expect_all(fh, n, OBX_RETRIABLE, "aborted", "abort");
    /* after close: publish refuses, nothing completes */
    if (def->publish_batch(inst, s.m, 1, accept) == OBX_OK && accept[0] == OBX_OK)
        failf("abort: publish after close accepted a message");
    close_checked(inst, fh, "abort");
    msgs_free(&s);
    fake_free(fh);
    free(accept);
}

/* timeout: unreachable bootstrap: every message completes UNAVAILABLE (not the
 * message's fault) after message_timeout_ms. */
static void scenario_timeout(const args *a)
{
    msgset s;
    size_t n = a->n ? a->n : 20;
    fake_host *fh = fake_from(a, n);
    long long t0 = now_ms();
    obx_instance *inst = create_ok(fh);
    obx_status *accept = calloc(n, sizeof *accept);

    if (now_ms() - t0 > 15000)
        failf("timeout: create blocked %lld ms", now_ms() - t0);
    msgs_init(&s, n, a->topic, 4);
    if (publish(inst, fh, s.m, n, accept) != n)
        failf("timeout: not all accepted");
    wait_completions(inst, fh, n, 60000);
    fprintf(stderr, "timeout: %zu completions after %lld ms: \"%s\"\n", fake_completions(fh),
            now_ms() - t0, fh->detail[0]);
    expect_all(fh, n, OBX_UNAVAILABLE, "timed out", "timeout");
    close_checked(inst, fh, "timeout");
    msgs_free(&s);
    fake_free(fh);
    free(accept);
}

/* badprop: refused configurations give no instance and an errstr naming the culprit. */
static void scenario_badprop(const args *a)
{
    static const struct {
        const char *opt, *prop, *want;
    } cases[] = {
        {NULL, "no.such.property=1", "no.such.property"},
        {NULL, "acks=1", "acks"},
        {NULL, "request.required.acks=0", "request.required.acks"},
        {NULL, "enable.idempotence=false", "enable.idempotence"},
        {NULL, "transactional.id=tx", "transactional.id"},
        {NULL, "delivery.report.only.error=true", "delivery.report.only.error"},
        {NULL, "message.timeout.ms=0", "message.timeout.ms"},
        {NULL, "compression.type=bogus", "compression.type"},
        {NULL, "max.in.flight.requests.per.connection=10", "max.in.flight"},
        {"key=bogus", NULL, "key"},
        {"partitioner=bogus", NULL, "partitioner"},
        {"max_in_flight=9", NULL, "max_in_flight"},
        {"message_timeout_ms=0", NULL, "message_timeout_ms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fake_host *fh = fake_from(a, 1);
        char err[512] = "";
        if (cases[i].opt)
            kv_add(fh->opts, &fh->nopts, cases[i].opt);
        if (cases[i].prop)
            kv_add(fh->props, &fh->nprops, cases[i].prop);
        obx_instance *inst = host_create(fh, err, sizeof err);
        if (inst) {
            failf("badprop: %s accepted", cases[i].opt ? cases[i].opt : cases[i].prop);
            def->destroy(inst);
        } else if (!strstr(err, cases[i].want)) {
            failf("badprop: %s: errstr \"%s\" does not name %s",
                  cases[i].opt ? cases[i].opt : cases[i].prop, err, cases[i].want);
        } else {
            fprintf(stderr, "badprop: refused: %s\n", err);
        }
        fake_free(fh);
    }
    /* missing bootstrap_servers (the host checks REQUIRED too; the driver must not crash) */
    fake_host *fh = fake_new(1);
    char err[512] = "";
    obx_instance *inst = def->create(&fh->host, err, sizeof err);
    if (inst || !strstr(err, "bootstrap_servers"))
        failf("badprop: missing bootstrap_servers: %s", inst ? "accepted" : err);
    if (inst)
        def->destroy(inst);
    fake_free(fh);
    /* pass-through properties that keep the guarantees are fine */
    fh = fake_from(a, 1);
    kv_add(fh->props, &fh->nprops, "linger.ms=5");
    kv_add(fh->props, &fh->nprops, "compression.type=lz4");
    kv_add(fh->props, &fh->nprops, "acks=all");
    kv_add(fh->props, &fh->nprops, "enable.idempotence=true");
    kv_add(fh->opts, &fh->nopts, "key=event_id");
    kv_add(fh->opts, &fh->nopts, "max_in_flight=1");
    inst = create_ok(fh);
    close_checked(inst, fh, "badprop (good properties)");
    fake_free(fh);
}

/* oversize: small, big, small: OK, refused PERMANENT with librdkafka's text, OK. */
static void scenario_oversize(const args *a)
{
    msgset s;
    fake_host *fh = fake_from(a, 3);
    obx_instance *inst = create_ok(fh);
    obx_status accept[3];
    size_t big_len = 64 * 1024;
    char *big = malloc(big_len);

    memset(big, 'x', big_len);
    msgs_init(&s, 3, a->topic, 5);
    s.m[1].payload = big;
    s.m[1].payload_len = big_len;
    if (publish(inst, fh, s.m, 3, accept) != 2 || accept[1] != OBX_PERMANENT)
        failf("oversize: want the big message refused PERMANENT and its neighbours accepted: "
              "%d %d %d",
              accept[0], accept[1], accept[2]);
    wait_completions(inst, fh, 2, 30000);
    if (fh->status[0] != OBX_OK || fh->status[2] != OBX_OK)
        failf("oversize: neighbours not OK: %d \"%s\", %d \"%s\"", fh->status[0], fh->detail[0],
              fh->status[2], fh->detail[2]);
    if (fh->done[1] || !strstr(fh->detail[1], "too large"))
        failf("oversize: big message: %d completions, reason \"%s\"", fh->done[1], fh->detail[1]);
    fprintf(stderr, "oversize: big message refused %d: \"%s\"\n", accept[1], fh->detail[1]);
    write_events(a->events, fh, &s);
    close_checked(inst, fh, "oversize");
    msgs_free(&s);
    fake_free(fh);
    free(big);
}

/*
 * faults: publish N messages while the private kmock's brokers go down for
 * 5 s and come back; retriable completions are re-published after a short
 * pause, as the engine would. Everything must end OK without restarting the
 * instance.
 */
static void scenario_faults(const args *a)
{
    msgset s;
    size_t n = a->n ? a->n : 20000, next = 0, retries = 0, ok = 0;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    obx_status accept[500];
    /* pending tokens from next to qn; one round may add a refused batch and
     * every failed completion before the queue is compacted */
    size_t *queue = malloc((2 * n + 500) * sizeof *queue), qn = 0;
    long long t0 = now_ms(), down_at = 0, up_at = 0, deadline = t0 + 180000;

    if (a->kmock <= 0) {
        failf("faults: -K KMOCK_PID required");
        return;
    }
    msgs_init(&s, n, a->topic, 6);
    for (size_t i = 0; i < n; i++)
        queue[qn++] = i; /* pending, in order */
    while (ok < n && now_ms() < deadline) {
        /* take the brokers down once a third is through, back up 5 s later */
        if (!down_at && ok >= n / 3) {
            kill(a->kmock, SIGUSR1);
            down_at = now_ms();
            fprintf(stderr, "faults: brokers DOWN after %zu acknowledged\n", ok);
        }
        if (down_at && !up_at && now_ms() - down_at >= 5000) {
            kill(a->kmock, SIGUSR2);
            up_at = now_ms();
            fprintf(stderr, "faults: brokers UP, %zu acknowledged\n", ok);
        }
        /* publish up to 500 pending messages, paced so they do not pile up */
        obx_message batch[500];
        size_t bn = 0;
        while (next < qn && bn < 500)
            batch[bn++] = s.m[queue[next++]];
        if (bn) {
            def->publish_batch(inst, batch, bn, accept);
            for (size_t i = 0; i < bn; i++)
                if (accept[i] != OBX_OK)
                    queue[qn++] = batch[i].token; /* refused: try again later */
        }
        def->poll(inst, 50);
        /* collect results: retriable ones go back in the queue */
        pthread_mutex_lock(&fh->mu);
        ok = 0;
        for (size_t i = 0; i < n; i++) {
            if (fh->done[i] && fh->status[i] == OBX_OK)
                ok++;
            else if (fh->done[i]) {
                if (fh->status[i] != OBX_RETRIABLE && fh->status[i] != OBX_UNAVAILABLE)
                    failf("faults: token %zu completed %d \"%s\"", i, fh->status[i], fh->detail[i]);
                fh->done[i] = 0;
                fh->completions--;
                retries++;
                s.m[i].attempt++;
                queue[qn++] = i;
            }
        }
        pthread_mutex_unlock(&fh->mu);
        if (next == qn) { /* compact the queue */
            next = qn = 0;
        } else if (qn > n) {
            memmove(queue, queue + next, (qn - next) * sizeof *queue);
            qn -= next;
            next = 0;
        }
        if (next < qn && down_at && !up_at)
            usleep(200 * 1000); /* backoff while the brokers are away */
    }
    if (!up_at) {
        kill(a->kmock, SIGUSR2);
        failf("faults: finished before the brokers were taken down and up");
    }
    fprintf(stderr,
            "faults: %zu/%zu acknowledged in %lld ms, %zu retriable completions re-published, "
            "recovered %lld ms after brokers came up\n",
            ok, n, now_ms() - t0, retries, now_ms() - up_at);
    if (ok != n)
        failf("faults: only %zu of %zu acknowledged", ok, n);
    if (def->flush(inst, 5000) != 0)
        failf("faults: flush reports messages in flight");
    write_events(a->events, fh, &s);
    close_checked(inst, fh, "faults");
    msgs_free(&s);
    fake_free(fh);
    free(queue);
}

/*
 * recover: a steady stream (20 messages every 10 ms) while the private
 * kmock's brokers go down for 1.5 s (KDRV_DOWN_MS), 2 s into the run. Failed completions
 * are published again. Reports the longest stretch without an
 * acknowledgement and how long after the brokers came back the first one
 * came (figures only: no timing is asserted). Checks that every message
 * ends OK exactly once per publish.
 */
static void scenario_recover(const args *a)
{
    size_t n = a->n ? a->n : 60000, next = 0, sent = 0, ok = 0, again = 0;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    obx_status accept[20];
    msgset s;
    long long t0 = now_ms(), down_at = 0, up_at = 0, first_ok_after_up = 0, stop_at = 0;
    size_t *queue = malloc((2 * n + 500) * sizeof *queue), qn = 0;
    const char *env = getenv("KDRV_DOWN_MS");
    long long down_ms = env ? atoll(env) : 1500;

    if (a->kmock <= 0) {
        failf("recover: -K KMOCK_PID required");
        return;
    }
    msgs_init(&s, n, a->topic, 7);
    for (;;) {
        long long now = now_ms();
        if (!down_at && now - t0 >= 2000) {
            kill(a->kmock, SIGUSR1);
            down_at = now;
            fprintf(stderr, "recover: brokers DOWN\n");
        }
        if (down_at && !up_at && now - down_at >= down_ms) {
            kill(a->kmock, SIGUSR2);
            up_at = now;
            fprintf(stderr, "recover: brokers UP\n");
        }
        if (up_at && !stop_at && now - up_at >= 15000)
            stop_at = now; /* stop sending fresh messages; drain */
        obx_message batch[20];
        size_t bn = 0;
        while (bn < 20 && next < qn)
            batch[bn++] = s.m[queue[next++]];
        while (bn < 20 && !stop_at && sent < n)
            batch[bn++] = s.m[sent++];
        if (bn) {
            def->publish_batch(inst, batch, bn, accept);
            for (size_t i = 0; i < bn; i++)
                if (accept[i] != OBX_OK)
                    queue[qn++] = batch[i].token;
        }
        def->poll(inst, 10);
        pthread_mutex_lock(&fh->mu);
        ok = 0;
        for (size_t i = 0; i < sent; i++) {
            if (fh->done[i] && fh->status[i] == OBX_OK) {
                ok++;
            } else if (fh->done[i]) {
                fh->done[i] = 0;
                fh->completions--;
                again++;
                queue[qn++] = i;
            }
        }
        if (up_at && !first_ok_after_up && fh->last_ok_ms > up_at)
            first_ok_after_up = fh->last_ok_ms - up_at;
        pthread_mutex_unlock(&fh->mu);
        if (next == qn) {
            next = qn = 0;
        } else if (qn > n) { /* compact: at most n are pending */
            memmove(queue, queue + next, (qn - next) * sizeof *queue);
            qn -= next;
            next = 0;
        }
        if (stop_at && ok == sent)
            break;
        if (now - t0 > 120000) {
            failf("recover: %zu of %zu acknowledged after 120 s", ok, sent);
            break;
        }
    }
    fprintf(stderr,
            "recover: %zu messages acknowledged, %zu failed completions published again; "
            "brokers down %lld ms; longest stretch without an acknowledgement %lld ms; first "
            "acknowledgement %lld ms after the brokers came back\n",
            ok, again, up_at - down_at, fh->longest_no_ok_ms, first_ok_after_up);
    if (!first_ok_after_up)
        failf("recover: nothing acknowledged after the brokers came back");
    close_checked(inst, fh, "recover");
    msgs_free(&s);
    fake_free(fh);
    free(queue);
}

/* probe: OK with the brokers up, UNAVAILABLE while they are down, OK once back. */
static void scenario_probe(const args *a)
{
    fake_host *fh = fake_from(a, 1);
    obx_instance *inst = create_ok(fh);
    obx_status st;

    if (!def->probe || a->kmock <= 0) {
        failf("probe: the driver has no probe, or -K KMOCK_PID is missing");
        return;
    }
    if ((st = def->probe(inst, 5000)) != OBX_OK)
        failf("probe: brokers up: %d, want OK", st);
    kill(a->kmock, SIGUSR1);
    usleep(300 * 1000);
    if ((st = def->probe(inst, 1000)) != OBX_UNAVAILABLE)
        failf("probe: brokers down: %d, want UNAVAILABLE", st);
    kill(a->kmock, SIGUSR2);
    if ((st = def->probe(inst, 5000)) != OBX_OK)
        failf("probe: brokers back: %d, want OK", st);
    close_checked(inst, fh, "probe");
    fake_free(fh);
}

int main(int argc, char **argv)
{
    const char *driver = NULL, *scenario = argc > 1 ? argv[1] : "";
    args a = {.proto = NULL};
    int opt;

    run_id = (unsigned)(time(NULL) ^ (getpid() << 16));
    optind = 2;
    def = NULL;
    fake_host proto = {.nopts = 0};
    a.proto = &proto;
    while ((opt = getopt(argc, argv, "d:b:t:n:e:o:p:K:")) != -1) {
        switch (opt) {
        case 'd': driver = optarg; break;
        case 'b': a.bootstrap = optarg; break;
        case 't': a.topic = optarg; break;
        case 'n': a.n = (size_t)atoll(optarg); break;
        case 'e': a.events = optarg; break;
        case 'o': kv_add(proto.opts, &proto.nopts, optarg); break;
        case 'p': kv_add(proto.props, &proto.nprops, optarg); break;
        case 'K': a.kmock = (pid_t)atoi(optarg); break;
        default: return 2;
        }
    }
    if (!driver || !a.bootstrap) {
        fprintf(stderr, "usage: kdrv SCENARIO -d DRIVER.so -b BOOTSTRAP [-t TOPIC] ...\n");
        return 2;
    }
    if (!a.topic)
        a.topic = "kdrv.events";
    void *dl = dlopen(driver, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
        return 1;
    }
    obx_driver_entry_fn entry = (obx_driver_entry_fn)dlsym(dl, OBX_DRIVER_ENTRY_SYMBOL);
    if (!entry || !(def = entry()) || def->magic != OBX_DRIVER_MAGIC ||
        def->abi_major != OBX_ABI_MAJOR) {
        fprintf(stderr, "FAIL: %s is not an outbox-relay driver\n", driver);
        return 1;
    }
    if (!strcmp(scenario, "basic"))
        scenario_basic(&a);
    else if (!strcmp(scenario, "abort"))
        scenario_abort(&a);
    else if (!strcmp(scenario, "timeout"))
        scenario_timeout(&a);
    else if (!strcmp(scenario, "badprop"))
        scenario_badprop(&a);
    else if (!strcmp(scenario, "oversize"))
        scenario_oversize(&a);
    else if (!strcmp(scenario, "faults"))
        scenario_faults(&a);
    else if (!strcmp(scenario, "recover"))
        scenario_recover(&a);
    else if (!strcmp(scenario, "probe"))
        scenario_probe(&a);
    else {
        fprintf(stderr, "kdrv: unknown scenario \"%s\"\n", scenario);
        return 2;
    }
    for (int i = 0; i < proto.nopts; i++)
        free(proto.opts[i].key), free(proto.opts[i].value);
    for (int i = 0; i < proto.nprops; i++)
        free(proto.props[i].key), free(proto.props[i].value);
    /* no dlclose: keeps symbols for leak reports; librdkafka holds global state anyway */
    (void)dl;
    if (failures)
        fprintf(stderr, "kdrv %s: %d failed checks\n", scenario, failures);
    else
        fprintf(stderr, "kdrv %s: OK\n", scenario);
    return failures ? 1 : 0;
}
