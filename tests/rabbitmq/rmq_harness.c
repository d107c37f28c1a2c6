/*
 * rmq_harness: drives a driver .so through a fake host, without the relay.
 * The RabbitMQ tests use it for what does not need the database:
 *
 *   rmq_harness DRIVER.so [-o key=value]... publish N AGGREGATES DEST [--bad-dest K DEST2]...
 *       [--long-type K] [--long-header K] [--big-header K BYTES] [--deadline S]
 *       [--pause-at K FILE] [--wait-at K FILE] [--big-payload K BYTES]
 *     --long-type / --long-header give event K a 300-character event type /
 *     header key (over AMQP's 255-byte short-string limit); --big-header
 *     gives it a header "big" of BYTES characters; --big-payload a payload
 *     of BYTES ({"n": K, "pad": "ppp..."}).
 *     With --wait-at, once K events went out (and were answered) it creates
 *     FILE and waits (60 s at most) until FILE.go exists: the test changes
 *     the broker in between. With --pause-after S FILE, the first batch
 *     after S seconds waits the same way (whatever is still to be sent).
 *     With --pause-at, once K events went out it creates FILE and, until
 *     FILE.go exists, leaves each batch in flight 500 ms before reading its
 *     acknowledgements: a fault lands on messages in flight however slow the
 *     fault or fast the machine.
 *     A tiny engine: publishes N events in batches of 500, waits for every
 *     completion, republishes RETRIABLE ones (100 ms .. 1 s backoff) until all
 *     are OK or PERMANENT. Event K (each --bad-dest) goes to DEST2. Payload
 *     {"n": i}, aggregate agg-(i % AGGREGATES), header trace=t-i.
 *     Prints "ok=.. permanent=.. retriable=.. refused=.. unavailable=.. held=.. protocol_errors=.."
 *     (retriable: RETRIABLE completions, which an engine counts as attempts;
 *     unavailable: UNAVAILABLE refusals and completions, which it does not)
 *     and every PERMANENT detail; exits 0 when every event ended and no
 *     completion broke the contract (twice, unknown token, after close, for
 *     a refused message). The host is tests/common's recording host (the
 *     relay's own, with refuse); options are checked as the relay checks
 *     them, and a refusal (with its reason) counts like a completion with
 *     that status.
 *   rmq_harness DRIVER.so [-o key=value]... create
 *     create only: prints the errstr and exits 1 when create refuses.
 *   rmq_harness DRIVER.so [-o key=value]... probe TIMEOUT_MS
 *     create, then probe: prints "probe=OK" or "probe=UNAVAILABLE".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_host.h"
#include "messages.h"

#define MAX_OPTS 32
#define BATCH 500

static const loaded_driver *drv;
static const obx_driver_def *def;
static const char *opts[MAX_OPTS]; /* name=value, as given */
static int nopts;

/* The driver's reason for failing a message behind a failed one of its aggregate. */
#define HELD_PREFIX "not sent in order"

/* A host for tokens 0 .. cap-1 with the options; NULL (after saying why on
 * stdout) when the relay would refuse them before create. */
static fake_host *host_for(size_t cap)
{
    fake_host *fh = fh_new(drv, cap);
    char err[1024];
    for (int i = 0; i < nopts; i++)
        if (fh_option(fh, opts[i]) < 0)
            exit(2);
    if (fh_validate(fh, err, sizeof err) < 0) {
        printf("create refused: %s\n", err);
        fh_free(fh);
        return NULL;
    }
    return fh;
}

static double now_s(void)
{
    return fh_now_ms() / 1000.0;
}

enum { PLAIN = 0, LONG_TYPE = 1, LONG_HEADER = 2 };

/* Message i: the factory's, to DEST, with a 300-character event type or header key for SHAPE,
 * and a header "big" = BIG unless NULL. */
static void fill(obx_message *m, msg_text *text, size_t i, size_t aggs, const char *dest,
                 int attempt, int shape, const char *big)
{
    static char longname[301];
    char agg_prefix[32];
    /* ids and aggregates unique per run: several runs may share a queue */
    snprintf(agg_prefix, sizeof agg_prefix, "agg-%x-", (unsigned)getpid());
    msg_shape ms = {.run = (unsigned)getpid(),
                    .aggregates = aggs,
                    .aggregate_prefix = agg_prefix,
                    .destination = dest,
                    .seq_header = "trace",
                    .seq_prefix = "t-"};
    msg_make(&ms, i, text, m);
    m->attempt = (uint32_t)attempt;
    memset(longname, 'x', 300);
    if (shape == LONG_TYPE)
        m->event_type = longname;
    if (shape == LONG_HEADER)
        text->headers[m->header_count++] = (obx_header){longname, "v"};
    if (big)
        text->headers[m->header_count++] = (obx_header){"big", big};
}

/* Creates FILE, then waits (60 s at most) until FILE.go exists. */
static void wait_for_go(const char *file)
{
    char go[512];
    snprintf(go, sizeof go, "%s.go", file);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    for (int w = 0; w < 600 && access(go, F_OK) != 0; w++)
        fh_sleep_ms(100);
}

/* The tiny engine's view of one event. */
typedef struct ev {
    int final; /* 0 pending, 1 OK, 2 PERMANENT */
    int attempts;
    obx_status last;
} ev;

static int cmd_publish(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t n = strtoul(argv[0], NULL, 10), aggs = strtoul(argv[1], NULL, 10);
    const char *dest = argv[2], *bad_dest[8];
    size_t bad_k[8], nbad = 0, long_k[8], nlong = 0;
    int long_shape[8];
    size_t big_k[8], nbig = 0, bigp_k[8], nbigp = 0, bigp_len[8];
    char *big_text[8], *bigp_text[8];
    size_t wait_at = 0;
    const char *wait_file = NULL, *pause_after_file = NULL;
    double pause_after = 0;
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
        } else if (strcmp(argv[i], "--big-header") == 0 && i + 2 < argc && nbig < 8) {
            big_k[nbig] = strtoul(argv[++i], NULL, 10);
            size_t bytes = strtoul(argv[++i], NULL, 10);
            big_text[nbig] = malloc(bytes + 1);
            if (!big_text[nbig])
                return 2;
            memset(big_text[nbig], 'h', bytes);
            big_text[nbig++][bytes] = '\0';
        } else if (strcmp(argv[i], "--big-payload") == 0 && i + 2 < argc && nbigp < 8) {
            bigp_k[nbigp] = strtoul(argv[++i], NULL, 10);
            size_t bytes = strtoul(argv[++i], NULL, 10);
            char *text = malloc(bytes + 64);
            if (!text)
                return 2;
            int head = snprintf(text, 64, "{\"n\": %zu, \"pad\": \"", bigp_k[nbigp]);
            size_t pad = bytes > (size_t)head + 2 ? bytes - (size_t)head - 2 : 0;
            memset(text + head, 'p', pad);
            memcpy(text + head + pad, "\"}", 2);
            bigp_len[nbigp] = (size_t)head + pad + 2;
            bigp_text[nbigp++] = text;
        } else if (strcmp(argv[i], "--pause-after") == 0 && i + 2 < argc) {
            pause_after = atof(argv[++i]);
            pause_after_file = argv[++i];
        } else if (strcmp(argv[i], "--wait-at") == 0 && i + 2 < argc) {
            wait_at = strtoul(argv[++i], NULL, 10);
            wait_file = argv[++i];
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
    fake_host *fh = host_for(n);
    if (!fh)
        return 1;
    char err[512] = "";
    obx_instance *inst = fh_create_unchecked(fh, err, sizeof(err));
    if (!inst) {
        fprintf(stderr, "harness: create failed: %s\n", err);
        fh_free(fh);
        return 1;
    }
    ev *evs = calloc(n ? n : 1, sizeof(*evs));
    long retriable = 0, refused = 0, unavailable = 0, held = 0;
    obx_message *msgs = calloc(BATCH, sizeof(*msgs));
    msg_text *texts = calloc(BATCH, sizeof(*texts));
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
        if (wait_file && next >= wait_at && nretry == 0) {
            wait_for_go(wait_file);
            wait_file = NULL;
        }
        if (pause_after_file && now_s() - t0 >= pause_after) {
            wait_for_go(pause_after_file);
            pause_after_file = NULL;
        }
        size_t cnt = 0;
        /* retried events first, in id order, then fresh ones (up to a wait) */
        size_t r = 0;
        while (r < nretry && cnt < BATCH)
            idx[cnt++] = retry[r++];
        memmove(retry, retry + r, (nretry - r) * sizeof(*retry));
        nretry -= r;
        while (next < n && cnt < BATCH && !(wait_file && next >= wait_at))
            idx[cnt++] = next++;
        if (cnt == 0 && wait_file)
            continue;
        if (cnt == 0)
            break;
        for (size_t k = 0; k < cnt; k++) {
            ev *e = &evs[idx[k]];
            e->attempts++;
            const char *d = dest;
            for (size_t j = 0; j < nbad; j++)
                if (idx[k] == bad_k[j])
                    d = bad_dest[j];
            int shape = PLAIN;
            for (size_t j = 0; j < nlong; j++)
                if (idx[k] == long_k[j])
                    shape = long_shape[j];
            const char *big = NULL;
            for (size_t j = 0; j < nbig; j++)
                if (idx[k] == big_k[j])
                    big = big_text[j];
            fill(&msgs[k], &texts[k], idx[k], aggs, d, e->attempts, shape, big);
            for (size_t j = 0; j < nbigp; j++)
                if (idx[k] == bigp_k[j]) {
                    msgs[k].payload = bigp_text[j];
                    msgs[k].payload_len = bigp_len[j];
                }
        }
        obx_status rc = fh_publish(fh, inst, msgs, cnt, accept);
        if (slow) /* the batch stays in flight (acknowledgements unread) for a while */
            fh_sleep_ms(500);
        if (!fh_wait_settled(fh, inst, 60000)) {
            fprintf(stderr, "harness: completions missing after 60 s (driver hangs)\n");
            hung = 1;
            break;
        }
        int failed = 0;
        for (size_t k = 0; k < cnt; k++) {
            ev *e = &evs[idx[k]];
            const fh_token *t = &fh->tok[idx[k]];
            /* refused: no completion came; the status counts like one */
            obx_status st = accept[k] == OBX_OK ? t->status : accept[k];
            e->last = st;
            if (strncmp(t->detail, HELD_PREFIX, strlen(HELD_PREFIX)) == 0)
                held++;
            if (accept[k] != OBX_OK)
                refused++;
            unavailable += st == OBX_UNAVAILABLE;
            if (st == OBX_OK)
                e->final = 1;
            else if (st == OBX_PERMANENT || (st == OBX_FATAL && accept[k] == OBX_OK))
                e->final = 2;
            else if (accept[k] == OBX_OK && st == OBX_RETRIABLE)
                retriable++; /* what an engine would count as an attempt */
            if (!e->final) {
                retry[nretry++] = idx[k];
                failed++;
            }
        }
        if (failed) {
            backoff = backoff ? (backoff * 2 > 1000 ? 1000 : backoff * 2) : 100;
            static int shown;
            if (shown++ < 5)
                fprintf(stderr, "harness: %d retriable, e.g. '%s' (retry in %d ms)\n", failed,
                        fh->tok[retry[nretry - 1]].detail, backoff);
            fh_sleep_ms(backoff);
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
    fh_close(fh, inst);
    def->close(inst);
    def->destroy(inst);
    long ok = 0, perm = 0, open = 0;
    for (size_t i = 0; i < n; i++) {
        if (evs[i].final == 1)
            ok++;
        else if (evs[i].final == 2) {
            perm++;
            printf("permanent n=%zu status=%d detail=%s\n", i, (int)evs[i].last, fh->tok[i].detail);
        } else
            open++;
    }
    char why[512];
    long protocol_errors = (long)fh_violations(fh, why, sizeof why);
    if (protocol_errors)
        fprintf(stderr, "harness: contract broken: %s\n", why);
    free(msgs);
    free(texts);
    free(accept);
    free(idx);
    free(retry);
    free(evs);
    for (size_t j = 0; j < nbig; j++)
        free(big_text[j]);
    for (size_t j = 0; j < nbigp; j++)
        free(bigp_text[j]);
    fh_free(fh);
    printf("ok=%ld permanent=%ld unfinished=%ld retriable=%ld refused=%ld unavailable=%ld held=%ld "
           "protocol_errors=%ld seconds=%.2f\n",
           ok, perm, open, retriable, refused, unavailable, held, protocol_errors, took);
    return !hung && open == 0 && protocol_errors == 0 ? 0 : 1;
}

/* create (and probe with TIMEOUT_MS >= 0); 0, or 1 when create refused. */
static int cmd_create(int probe_timeout_ms)
{
    fake_host *fh = host_for(1);
    if (!fh)
        return 1;
    char err[512] = "";
    obx_instance *inst = fh_create_unchecked(fh, err, sizeof(err));
    if (!inst) {
        printf("create refused: %s\n", err);
        fh_free(fh);
        return 1;
    }
    if (probe_timeout_ms >= 0) {
        obx_status st = def->probe(inst, probe_timeout_ms);
        printf("probe=%s\n", st == OBX_OK ? "OK" : st == OBX_UNAVAILABLE ? "UNAVAILABLE" : "other");
    }
    def->destroy(inst);
    fh_free(fh);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rmq_harness DRIVER.so [-o k=v]... publish|create ...\n");
        return 2;
    }
    char err[1024];
    loaded_driver *loaded = fh_load(argv[1], err, sizeof err);
    if (!loaded) {
        fprintf(stderr, "harness: %s\n", err);
        return 2;
    }
    drv = loaded;
    def = &drv->def;
    int i = 2;
    for (; i + 1 < argc && strcmp(argv[i], "-o") == 0 && nopts < MAX_OPTS; i += 2)
        opts[nopts++] = argv[i + 1];
    int rc = 2;
    if (i >= argc)
        rc = 2;
    else if (strcmp(argv[i], "publish") == 0)
        rc = cmd_publish(argc - i - 1, argv + i + 1);
    else if (strcmp(argv[i], "probe") == 0 && i + 1 < argc && def->probe)
        rc = cmd_create(atoi(argv[i + 1]));
    else if (strcmp(argv[i], "create") == 0)
        rc = cmd_create(-1);
    loader_close(loaded);
    return rc;
}
