/*
 * rmq_harness: drives a driver .so through a fake host, without the relay.
 * The RabbitMQ tests use it for what does not need the database:
 *
 *   rmq_harness DRIVER.so [-o key=value]... publish N AGGREGATES DEST [--bad-dest K DEST2]...
 *       [--long-type K] [--long-header K] [--deadline S] [--pause-at K FILE]
 *     --long-type / --long-header give event K a 300-character event type /
 *     header key (over AMQP's 255-byte short-string limit).
 *     With --pause-at, once K events went out it creates FILE and, until
 *     FILE.go exists, leaves each batch in flight 500 ms before reading its
 *     acknowledgements: a fault lands on messages in flight however slow the
 *     fault or fast the machine.
 *     A tiny engine: publishes N events in batches of 500, waits for every
 *     completion, republishes RETRIABLE ones (100 ms .. 1 s backoff) until all
 *     are OK or PERMANENT. Event K (each --bad-dest) goes to DEST2. Payload
 *     {"n": i}, aggregate agg-(i % AGGREGATES), header trace=t-i.
 *     Prints "ok=.. permanent=.. retriable=.. refused=.. held=.. protocol_errors=.."
 *     and every PERMANENT detail; exits 0 when every event ended and no
 *     completion broke the contract (twice, unknown token, after close, for
 *     a refused message). The fake host is an ABI 1.1 host: it has refuse,
 *     checks option values against the driver's option_specs and treats a
 *     refusal (with its reason) like a completion with that status.
 *   rmq_harness DRIVER.so [-o key=value]... create
 *     create only: prints the errstr and exits 1 when create refuses.
 *   rmq_harness DRIVER.so [-o key=value]... probe TIMEOUT_MS
 *     create, then probe: prints "probe=OK" or "probe=UNAVAILABLE".
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"

#define MAX_OPTS 32
#define BATCH 500

static const obx_driver_def *def;
static struct {
    const char *name, *value;
} opts[MAX_OPTS];
static int nopts;

typedef struct ev {
    int inflight; /* accepted, not completed */
    int final;    /* 0 pending, 1 OK, 2 PERMANENT */
    int attempts;
    char detail[256];
    obx_status last;
} ev;

typedef struct hctx {
    obx_host host;
    ev *evs;
    size_t n;
    int closed;
    long completions, retriable, refused, unavailable, held, protocol_errors;
} hctx;

static void h_log(void *c, obx_log_level level, const char *fmt, ...)
{
    (void)c;
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[driver %s] ", names[level & 3]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *opt_value(const char *name)
{
    for (int i = 0; i < nopts; i++)
        if (strcmp(opts[i].name, name) == 0)
            return opts[i].value;
    return NULL;
}

static int h_string(void *c, const char *name, const char **out)
{
    (void)c;
    const char *v = opt_value(name);
    if (v)
        *out = v;
    return v != NULL;
}

static int h_int(void *c, const char *name, int64_t *out)
{
    (void)c;
    const char *v = opt_value(name);
    if (v)
        *out = strtoll(v, NULL, 10);
    return v != NULL;
}

static int h_bool(void *c, const char *name, int *out)
{
    (void)c;
    const char *v = opt_value(name);
    if (v)
        *out = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
    return v != NULL;
}

static int h_double(void *c, const char *name, double *out)
{
    (void)c;
    const char *v = opt_value(name);
    if (v)
        *out = strtod(v, NULL);
    return v != NULL;
}

static int h_property(void *c, size_t i, const char **k, const char **v)
{
    (void)c, (void)i, (void)k, (void)v;
    return 0;
}

/* The driver's reason for failing a message behind a failed one of its aggregate. */
#define HELD_PREFIX "not sent in order"

static void h_complete(void *c, uint64_t token, obx_status status, int code, const char *detail)
{
    hctx *h = c;
    (void)code;
    h->completions++;
    if (h->closed || token >= h->n || !h->evs[token].inflight) {
        h->protocol_errors++;
        fprintf(stderr, "harness: bad completion token=%llu closed=%d\n", (unsigned long long)token,
                h->closed);
        return;
    }
    ev *e = &h->evs[token];
    e->inflight = 0;
    e->last = status;
    snprintf(e->detail, sizeof(e->detail), "%s", detail ? detail : "");
    if (strncmp(e->detail, HELD_PREFIX, strlen(HELD_PREFIX)) == 0)
        h->held++;
    if (status == OBX_OK)
        e->final = 1;
    else if (status == OBX_PERMANENT || status == OBX_FATAL)
        e->final = 2;
    else
        h->retriable++;
}

/* A refusal at publish: no completion follows; the reason is kept like a completion's. */
static void h_refuse(void *c, uint64_t token, int code, const char *detail)
{
    hctx *h = c;
    (void)code;
    if (token >= h->n || !h->evs[token].inflight) {
        h->protocol_errors++;
        fprintf(stderr, "harness: bad refusal token=%llu\n", (unsigned long long)token);
        return;
    }
    snprintf(h->evs[token].detail, sizeof(h->evs[token].detail), "%s", detail ? detail : "");
}

static void hctx_init(hctx *h, size_t n)
{
    memset(h, 0, sizeof(*h));
    h->host = (obx_host){sizeof(obx_host), h,        h_log,      h_string,   h_int,
                         h_bool,           h_double, h_property, h_complete, h_refuse};
    h->evs = calloc(n ? n : 1, sizeof(ev));
    h->n = n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Message storage for one batch (strings live until the next batch). */
typedef struct mbuf {
    char eid[40], agg[32], payload[64], trace[32], dest[256], longname[301];
    obx_header hdr[2];
} mbuf;

enum { PLAIN = 0, LONG_TYPE = 1, LONG_HEADER = 2 };

static void fill(obx_message *m, mbuf *b, size_t i, size_t aggs, const char *dest, int attempt,
                 int shape)
{
    /* ids unique per run: several runs may share a queue */
    snprintf(b->eid, sizeof(b->eid), "%08x-0000-4000-8000-%012zu", (unsigned)getpid(), i);
    snprintf(b->agg, sizeof(b->agg), "agg-%x-%zu", (unsigned)getpid(), i % aggs);
    snprintf(b->payload, sizeof(b->payload), "{\"n\": %zu}", i);
    snprintf(b->trace, sizeof(b->trace), "t-%zu", i);
    snprintf(b->dest, sizeof(b->dest), "%s", dest);
    b->hdr[0] = (obx_header){"trace", b->trace};
    *m = (obx_message){.token = i,
                       .event_id = b->eid,
                       .event_type = "order.created",
                       .aggregate_type = "Order",
                       .aggregate_id = b->agg,
                       .destination = b->dest,
                       .payload = b->payload,
                       .payload_len = strlen(b->payload),
                       .content_type = "application/json",
                       .created_at_us = (int64_t)time(NULL) * 1000000 + 123456,
                       .headers = b->hdr,
                       .header_count = 1,
                       .attempt = (uint32_t)attempt};
    if (shape != PLAIN) {
        memset(b->longname, 'x', 300);
        b->longname[300] = '\0';
    }
    if (shape == LONG_TYPE)
        m->event_type = b->longname;
    if (shape == LONG_HEADER) {
        b->hdr[1] = (obx_header){b->longname, "v"};
        m->header_count = 2;
    }
}

/* Waits for every accepted message of the batch; 0, or -1 when the driver hangs. */
static int wait_batch(obx_instance *inst, hctx *h, const size_t *idx, size_t cnt, double limit_s)
{
    double until = now_s() + limit_s;
    for (;;) {
        size_t open = 0;
        for (size_t k = 0; k < cnt; k++)
            open += h->evs[idx[k]].inflight;
        if (open == 0)
            return 0;
        if (now_s() > until)
            return -1;
        if (def->poll)
            def->poll(inst, 200);
        def->flush(inst, 200);
    }
}

static int cmd_publish(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t n = strtoul(argv[0], NULL, 10), aggs = strtoul(argv[1], NULL, 10);
    const char *dest = argv[2], *bad_dest[8];
    size_t bad_k[8], nbad = 0, long_k[8], nlong = 0;
    int long_shape[8];
    double deadline = 300;
    size_t pause_at = 0;
    const char *pause_file = NULL;
    char go_file[512] = "";
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--bad-dest") == 0 && i + 2 < argc && nbad < 8) {
            bad_k[nbad] = strtoul(argv[++i], NULL, 10);
            bad_dest[nbad++] = argv[++i];
        } else if ((strcmp(argv[i], "--long-type") == 0 || strcmp(argv[i], "--long-header") == 0) &&
                   i + 1 < argc && nlong < 8) {
            long_shape[nlong] = strcmp(argv[i], "--long-type") == 0 ? LONG_TYPE : LONG_HEADER;
            long_k[nlong++] = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--deadline") == 0 && i + 1 < argc) {
            deadline = atof(argv[++i]);
        } else if (strcmp(argv[i], "--pause-at") == 0 && i + 2 < argc) {
            pause_at = strtoul(argv[++i], NULL, 10);
            pause_file = argv[++i];
            snprintf(go_file, sizeof go_file, "%s.go", pause_file);
        } else {
            return 2;
        }
    }
    hctx h;
    hctx_init(&h, n);
    char err[512] = "";
    obx_instance *inst = def->create(&h.host, err, sizeof(err));
    if (!inst) {
        fprintf(stderr, "harness: create failed: %s\n", err);
        return 1;
    }
    obx_message *msgs = calloc(BATCH, sizeof(*msgs));
    mbuf *bufs = calloc(BATCH, sizeof(*bufs));
    obx_status *accept = calloc(BATCH, sizeof(*accept));
    size_t *idx = calloc(BATCH, sizeof(*idx));
    double t0 = now_s(), end = t0 + deadline;
    size_t next = 0;
    int backoff = 0, hung = 0;
    size_t *retry = calloc(n ? n : 1, sizeof(*retry));
    size_t nretry = 0;
    int slow = 0; /* between FILE and FILE.go */
    while (now_s() < end) {
        if (pause_file && next >= pause_at && !slow) {
            FILE *f = fopen(pause_file, "w");
            if (f)
                fclose(f);
            slow = 1;
        }
        if (slow && access(go_file, F_OK) == 0)
            slow = 0, pause_file = NULL;
        size_t cnt = 0;
        /* retried events first, in id order, then fresh ones */
        size_t r = 0;
        while (r < nretry && cnt < BATCH)
            idx[cnt++] = retry[r++];
        memmove(retry, retry + r, (nretry - r) * sizeof(*retry));
        nretry -= r;
        while (next < n && cnt < BATCH)
            idx[cnt++] = next++;
        if (cnt == 0)
            break;
        for (size_t k = 0; k < cnt; k++) {
            ev *e = &h.evs[idx[k]];
            e->attempts++;
            const char *d = dest;
            for (size_t j = 0; j < nbad; j++)
                if (idx[k] == bad_k[j])
                    d = bad_dest[j];
            int shape = PLAIN;
            for (size_t j = 0; j < nlong; j++)
                if (idx[k] == long_k[j])
                    shape = long_shape[j];
            fill(&msgs[k], &bufs[k], idx[k], aggs, d, e->attempts, shape);
            e->inflight = 1;
        }
        obx_status rc = def->publish_batch(inst, msgs, cnt, accept);
        if (slow) /* the batch stays in flight (acknowledgements unread) for a while */
            sleep_ms(500);
        for (size_t k = 0; k < cnt; k++) {
            ev *e = &h.evs[idx[k]];
            if (accept[k] == OBX_OK)
                continue;
            /* refused: no completion will come; the status counts like one */
            e->inflight = 0;
            e->last = accept[k];
            h.refused++;
            if (strncmp(e->detail, HELD_PREFIX, strlen(HELD_PREFIX)) == 0)
                h.held++;
            if (accept[k] == OBX_PERMANENT)
                e->final = 2;
            else if (accept[k] == OBX_UNAVAILABLE)
                h.unavailable++;
        }
        if (wait_batch(inst, &h, idx, cnt, 60) != 0) {
            fprintf(stderr, "harness: completions missing after 60 s (driver hangs)\n");
            hung = 1;
            break;
        }
        int failed = 0;
        for (size_t k = 0; k < cnt; k++)
            if (!h.evs[idx[k]].final) {
                retry[nretry++] = idx[k];
                failed++;
            }
        if (failed) {
            backoff = backoff ? (backoff * 2 > 1000 ? 1000 : backoff * 2) : 100;
            static int shown;
            if (shown++ < 5)
                fprintf(stderr, "harness: %d retriable, e.g. '%s' (retry in %d ms)\n", failed,
                        h.evs[retry[nretry - 1]].detail, backoff);
            sleep_ms(backoff);
        } else {
            backoff = 0;
        }
        if (rc == OBX_FATAL) {
            fprintf(stderr, "harness: publish_batch returned FATAL\n");
            break;
        }
        /* keep retried events in id order ahead of fresh ones */
        for (size_t a = 1; a < nretry; a++)
            for (size_t b = a; b > 0 && retry[b - 1] > retry[b]; b--) {
                size_t t = retry[b];
                retry[b] = retry[b - 1];
                retry[b - 1] = t;
            }
    }
    double took = now_s() - t0;
    def->close(inst);
    h.closed = 1;
    def->close(inst);
    def->destroy(inst);
    long ok = 0, perm = 0, open = 0;
    for (size_t i = 0; i < n; i++) {
        if (h.evs[i].final == 1)
            ok++;
        else if (h.evs[i].final == 2) {
            perm++;
            printf("permanent n=%zu status=%d detail=%s\n", i, (int)h.evs[i].last, h.evs[i].detail);
        } else
            open++;
    }
    free(msgs);
    free(bufs);
    free(accept);
    free(idx);
    free(retry);
    free(h.evs);
    printf("ok=%ld permanent=%ld unfinished=%ld retriable=%ld refused=%ld unavailable=%ld held=%ld "
           "protocol_errors=%ld seconds=%.2f\n",
           ok, perm, open, h.retriable, h.refused, h.unavailable, h.held, h.protocol_errors, took);
    return !hung && open == 0 && h.protocol_errors == 0 ? 0 : 1;
}

/* The host's check of one option value against the driver's declaration:
 * NULL when it passes, else why not. */
static const char *spec_check(const char *name, const char *value)
{
    for (size_t i = 0; def->options && def->options[i].name; i++) {
        if (strcmp(def->options[i].name, name) != 0)
            continue;
        const obx_option_spec *sp = def->option_specs ? &def->option_specs[i] : NULL;
        if (!sp)
            return NULL;
        if (def->options[i].type == OBX_OPT_INT && sp->min < sp->max) {
            double v = strtod(value, NULL);
            if (v < sp->min || v > sp->max)
                return "out of range";
        }
        if (sp->choices) {
            for (const char *const *c = sp->choices; *c; c++)
                if (strcmp(*c, value) == 0)
                    return NULL;
            return "not one of the choices";
        }
        return NULL;
    }
    return "unknown option";
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rmq_harness DRIVER.so [-o k=v]... publish|create ...\n");
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "harness: %s\n", dlerror());
        return 2;
    }
    obx_driver_entry_fn entry = (obx_driver_entry_fn)dlsym(dl, OBX_DRIVER_ENTRY_SYMBOL);
    if (!entry || !(def = entry()) || def->magic != OBX_DRIVER_MAGIC) {
        fprintf(stderr, "harness: not a driver\n");
        return 2;
    }
    int i = 2;
    for (; i + 1 < argc && strcmp(argv[i], "-o") == 0; i += 2) {
        char *eq = strchr(argv[i + 1], '=');
        if (!eq || nopts == MAX_OPTS)
            return 2;
        *eq = '\0';
        opts[nopts].name = argv[i + 1];
        opts[nopts++].value = eq + 1;
        const char *why = spec_check(argv[i + 1], eq + 1);
        if (why) {
            /* what the host would refuse before create */
            printf("create refused: option %s: %s\n", argv[i + 1], why);
            return 1;
        }
    }
    if (i >= argc)
        return 2;
    int rc = 2;
    if (strcmp(argv[i], "publish") == 0) {
        rc = cmd_publish(argc - i - 1, argv + i + 1);
    } else if (strcmp(argv[i], "probe") == 0 && i + 1 < argc && def->probe) {
        hctx h;
        hctx_init(&h, 1);
        char err[512] = "";
        obx_instance *inst = def->create(&h.host, err, sizeof(err));
        if (inst) {
            obx_status st = def->probe(inst, atoi(argv[i + 1]));
            printf("probe=%s\n", st == OBX_OK            ? "OK"
                                 : st == OBX_UNAVAILABLE ? "UNAVAILABLE"
                                                         : "other");
            def->destroy(inst);
            rc = 0;
        } else {
            printf("create refused: %s\n", err);
            rc = 1;
        }
        free(h.evs);
    } else if (strcmp(argv[i], "create") == 0) {
        hctx h;
        hctx_init(&h, 1);
        char err[512] = "";
        obx_instance *inst = def->create(&h.host, err, sizeof(err));
        if (inst) {
            def->destroy(inst);
            rc = 0;
        } else {
            printf("create refused: %s\n", err);
            rc = 1;
        }
        free(h.evs);
    }
    dlclose(dl);
    return rc;
}
