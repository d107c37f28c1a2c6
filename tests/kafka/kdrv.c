/*
 * kdrv: drives the Kafka driver .so through a recording fake host, the way
 * the relay does, and checks the ABI's completion contract on the way:
 * exactly one completion per accepted message, none after close.
 *
 *   kdrv SCENARIO -d DRIVER.so -b BOOTSTRAP [-t TOPIC] [-n N] [-e EVENTS_FILE]
 *        [-o option=value]... [-p property=value]... [-K KMOCK_PID]
 *
 * Scenarios: basic, abort, timeout, badprop, oversize, faults, recover, probe (see below);
 * topics, unknown, toolarge, hang, manytopics, queuefull, denied (kdrv_pushback.c).
 * -e writes the event ids completed OK, one a line, for the consumer check.
 * Exit 0 on success; every failed check prints "FAIL: ..." and exits 1.
 * The host is tests/common's recording host (the relay's own, with refuse:
 * a refusal's reason is kept like a completion's detail); options are
 * checked as the relay checks them before create.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kdrv.h"

const loaded_driver *drv;
const obx_driver_def *def;
int failures;

void failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

long long kdrv_now_ms(void)
{
    return (long long)fh_now_ms();
}

/* ------------------------------------------------------------ messages */
unsigned run_id;

/* n messages to topic: 50 aggregates, headers traceparent and seq = n. */
void msgs_init(msg_set *s, size_t n, const char *topic, unsigned salt)
{
    static const obx_header trace[] = {
        {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
    msg_shape shape = {.run = run_id,
                       .salt = salt,
                       .destination = topic,
                       .headers = trace,
                       .header_count = 1,
                       .seq_header = "seq"};
    msg_set_make(s, n, &shape);
}

/* Publishes a batch; returns how many were accepted. */
size_t publish(obx_instance *inst, fake_host *fh, const obx_message *msgs, size_t count,
               obx_status *accept)
{
    size_t ok = 0;
    obx_status rc = fh_publish(fh, inst, msgs, count, accept);
    if (rc != OBX_OK)
        failf("publish_batch returned %d", rc);
    for (size_t i = 0; i < count; i++)
        ok += accept[i] == OBX_OK;
    return ok;
}

void write_events(const char *path, fake_host *fh, const msg_set *s)
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
        if (fh->tok[i].completions && fh->tok[i].status == OBX_OK)
            fprintf(fp, "%s\n", s->text[i].event_id);
    fclose(fp);
}

void close_checked(obx_instance *inst, fake_host *fh, const char *what)
{
    char why[512];
    fh_close(fh, inst);
    def->close(inst); /* twice: harmless */
    def->poll(inst, 50);
    if (def->flush(inst, 10) != 0)
        failf("%s: flush after close reports messages in flight", what);
    def->destroy(inst);
    if (fh_violations(fh, why, sizeof why))
        failf("%s: %s", what, why);
}

obx_instance *create_ok(fake_host *fh)
{
    char err[512] = "";
    obx_instance *inst = fh_create(fh, err, sizeof err);
    if (!inst) {
        fprintf(stderr, "FAIL: create: %s\n", err);
        exit(1);
    }
    return inst;
}

/* ------------------------------------------------------------ scenarios */

void must(int rc)
{
    if (rc < 0)
        exit(2);
}

/* A host for tokens 0 .. cap-1 with the command line's options and properties. */
fake_host *fake_from(const args *a, size_t cap)
{
    fake_host *fh = fh_new(drv, cap);
    must(fh_set(fh, "bootstrap_servers", a->bootstrap));
    for (int i = 0; i < a->nopts; i++)
        must(fh_option(fh, a->opts[i]));
    for (int i = 0; i < a->nprops; i++)
        must(fh_property(fh, a->props[i]));
    return fh;
}

void expect_all(fake_host *fh, size_t n, obx_status want, const char *detail_part, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[i];
        if (t->completions != 1 || t->status != want ||
            (detail_part && !strstr(t->detail, detail_part))) {
            if (bad++ < 3)
                failf(
                    "%s: token %zu: %u completions, status %d, detail \"%s\" (want status %d%s%s)",
                    what, i, t->completions, t->status, t->detail, want,
                    detail_part ? " with " : "", detail_part ? detail_part : "");
        }
    }
    if (bad)
        failf("%s: %zu of %zu messages not as expected", what, bad, n);
}

/* basic: batches of 0, 1 and many; two instances at once; all OK exactly once. */
static void scenario_basic(const args *a)
{
    msg_set s, s2;
    size_t n = a->n ? a->n : 2000, accepted = 0;
    fake_host *fh = fake_from(a, n), *fh2 = fake_from(a, 10);
    obx_instance *inst = create_ok(fh), *inst2 = create_ok(fh2);
    obx_status *accept = calloc(n, sizeof *accept);
    long long t0 = kdrv_now_ms();

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
    fh_wait_completions(fh, inst, n, 30000);
    fh_wait_completions(fh2, inst2, 10, 30000);
    if (def->flush(inst, 5000) != 0 || def->flush(inst2, 5000) != 0)
        failf("basic: flush reports messages still in flight");
    expect_all(fh, n, OBX_OK, NULL, "basic");
    expect_all(fh2, 10, OBX_OK, NULL, "basic (second instance)");
    fprintf(stderr, "basic: %zu + 10 messages acknowledged in %lld ms\n", n, kdrv_now_ms() - t0);
    write_events(a->events, fh, &s);
    write_events(a->events, fh2, &s2);
    close_checked(inst, fh, "basic");
    close_checked(inst2, fh2, "basic (second instance)");
    fh_free(fh);
    fh_free(fh2);
    msg_set_free(&s);
    msg_set_free(&s2);
    free(accept);
}

/* abort: nothing can be delivered; close completes everything RETRIABLE, "aborted". */
static void scenario_abort(const args *a)
{
    msg_set s;
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
    long long t0 = kdrv_now_ms();
    def->close(inst);
    fprintf(stderr, "abort: close completed %zu messages in %lld ms\n", fh_completions(fh),
            kdrv_now_ms() - t0);
    expect_all(fh, n, OBX_RETRIABLE, "aborted", "abort");
    /* after close: publish refuses, nothing completes */
    if (fh_publish(fh, inst, s.m, 1, accept) == OBX_OK && accept[0] == OBX_OK)
        failf("abort: publish after close accepted a message");
    close_checked(inst, fh, "abort");
    msg_set_free(&s);
    fh_free(fh);
    free(accept);
}

/* timeout: unreachable bootstrap: every message completes UNAVAILABLE (not the
 * message's fault) after message_timeout_ms. */
static void scenario_timeout(const args *a)
{
    msg_set s;
    size_t n = a->n ? a->n : 20;
    fake_host *fh = fake_from(a, n);
    long long t0 = kdrv_now_ms();
    obx_instance *inst = create_ok(fh);
    obx_status *accept = calloc(n, sizeof *accept);

    if (kdrv_now_ms() - t0 > 15000)
        failf("timeout: create blocked %lld ms", kdrv_now_ms() - t0);
    msgs_init(&s, n, a->topic, 4);
    if (publish(inst, fh, s.m, n, accept) != n)
        failf("timeout: not all accepted");
    fh_wait_completions(fh, inst, n, 60000);
    fprintf(stderr, "timeout: %zu completions after %lld ms: \"%s\"\n", fh_completions(fh),
            kdrv_now_ms() - t0, fh->tok[0].detail);
    expect_all(fh, n, OBX_UNAVAILABLE, "timed out", "timeout");
    close_checked(inst, fh, "timeout");
    msg_set_free(&s);
    fh_free(fh);
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
            must(fh_option(fh, cases[i].opt));
        if (cases[i].prop)
            must(fh_property(fh, cases[i].prop));
        obx_instance *inst = fh_create(fh, err, sizeof err);
        if (inst) {
            failf("badprop: %s accepted", cases[i].opt ? cases[i].opt : cases[i].prop);
            def->destroy(inst);
        } else if (!strstr(err, cases[i].want)) {
            failf("badprop: %s: errstr \"%s\" does not name %s",
                  cases[i].opt ? cases[i].opt : cases[i].prop, err, cases[i].want);
        } else {
            fprintf(stderr, "badprop: refused: %s\n", err);
        }
        fh_free(fh);
    }
    /* missing bootstrap_servers (the host checks REQUIRED too; the driver must not crash) */
    fake_host *fh = fh_new(drv, 1);
    char err[512] = "";
    obx_instance *inst = fh_create_unchecked(fh, err, sizeof err);
    if (inst || !strstr(err, "bootstrap_servers"))
        failf("badprop: missing bootstrap_servers: %s", inst ? "accepted" : err);
    if (inst)
        def->destroy(inst);
    fh_free(fh);
    /* pass-through properties that keep the guarantees are fine */
    fh = fake_from(a, 1);
    must(fh_property(fh, "linger.ms=5"));
    must(fh_property(fh, "compression.type=lz4"));
    must(fh_property(fh, "acks=all"));
    must(fh_property(fh, "enable.idempotence=true"));
    must(fh_option(fh, "key=event_id"));
    must(fh_option(fh, "max_in_flight=1"));
    inst = create_ok(fh);
    close_checked(inst, fh, "badprop (good properties)");
    fh_free(fh);
}

/* oversize: small, big, small: OK, refused PERMANENT with its size and the limit, OK. */
static void scenario_oversize(const args *a)
{
    msg_set s;
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
    fh_wait_completions(fh, inst, 2, 30000);
    const fh_token *t = fh->tok;
    if (t[0].status != OBX_OK || t[2].status != OBX_OK)
        failf("oversize: neighbours not OK: %d \"%s\", %d \"%s\"", t[0].status, t[0].detail,
              t[2].status, t[2].detail);
    if (t[1].completions || !strstr(t[1].detail, "too large") ||
        !strstr(t[1].detail, "over message.max.bytes 2000"))
        failf("oversize: big message: %u completions, reason \"%s\"", t[1].completions,
              t[1].detail);
    fprintf(stderr, "oversize: big message refused %d: \"%s\"\n", accept[1], t[1].detail);
    write_events(a->events, fh, &s);
    close_checked(inst, fh, "oversize");
    msg_set_free(&s);
    fh_free(fh);
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
    msg_set s;
    size_t n = a->n ? a->n : 20000, next = 0, retries = 0, ok = 0;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    obx_status accept[500];
    /* pending tokens from next to qn; one round may add a refused batch and
     * every failed completion before the queue is compacted */
    size_t *queue = malloc((2 * n + 500) * sizeof *queue), qn = 0;
    long long t0 = kdrv_now_ms(), down_at = 0, up_at = 0, deadline = t0 + 180000;

    if (a->kmock <= 0) {
        failf("faults: -K KMOCK_PID required");
        return;
    }
    msgs_init(&s, n, a->topic, 6);
    for (size_t i = 0; i < n; i++)
        queue[qn++] = i; /* pending, in order */
    while (ok < n && kdrv_now_ms() < deadline) {
        /* take the brokers down once a third is through, back up 5 s later */
        if (!down_at && ok >= n / 3) {
            kill(a->kmock, SIGUSR1);
            down_at = kdrv_now_ms();
            fprintf(stderr, "faults: brokers DOWN after %zu acknowledged\n", ok);
        }
        if (down_at && !up_at && kdrv_now_ms() - down_at >= 5000) {
            kill(a->kmock, SIGUSR2);
            up_at = kdrv_now_ms();
            fprintf(stderr, "faults: brokers UP, %zu acknowledged\n", ok);
        }
        /* publish up to 500 pending messages, paced so they do not pile up */
        obx_message batch[500];
        size_t bn = 0;
        while (next < qn && bn < 500)
            batch[bn++] = s.m[queue[next++]];
        if (bn) {
            fh_publish(fh, inst, batch, bn, accept);
            for (size_t i = 0; i < bn; i++)
                if (accept[i] != OBX_OK)
                    queue[qn++] = batch[i].token; /* refused: try again later */
        }
        def->poll(inst, 50);
        /* collect results: retriable ones go back in the queue */
        pthread_mutex_lock(&fh->lock);
        ok = 0;
        for (size_t i = 0; i < n; i++) {
            fh_token *t = &fh->tok[i];
            if (t->completions && t->status == OBX_OK)
                ok++;
            else if (t->completions) {
                if (t->status != OBX_RETRIABLE && t->status != OBX_UNAVAILABLE)
                    failf("faults: token %zu completed %d \"%s\"", i, t->status, t->detail);
                t->completions = 0; /* taken: offered again */
                fh->completions--;
                retries++;
                s.m[i].attempt++;
                queue[qn++] = i;
            }
        }
        pthread_mutex_unlock(&fh->lock);
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
            ok, n, kdrv_now_ms() - t0, retries, kdrv_now_ms() - up_at);
    if (ok != n)
        failf("faults: only %zu of %zu acknowledged", ok, n);
    if (def->flush(inst, 5000) != 0)
        failf("faults: flush reports messages in flight");
    write_events(a->events, fh, &s);
    close_checked(inst, fh, "faults");
    msg_set_free(&s);
    fh_free(fh);
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
    msg_set s;
    long long t0 = kdrv_now_ms(), down_at = 0, up_at = 0, first_ok_after_up = 0, stop_at = 0;
    size_t *queue = malloc((2 * n + 500) * sizeof *queue), qn = 0;
    const char *env = getenv("KDRV_DOWN_MS");
    long long down_ms = env ? atoll(env) : 1500;

    if (a->kmock <= 0) {
        failf("recover: -K KMOCK_PID required");
        return;
    }
    msgs_init(&s, n, a->topic, 7);
    for (;;) {
        long long now = kdrv_now_ms();
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
            fh_publish(fh, inst, batch, bn, accept);
            for (size_t i = 0; i < bn; i++)
                if (accept[i] != OBX_OK)
                    queue[qn++] = batch[i].token;
        }
        def->poll(inst, 10);
        pthread_mutex_lock(&fh->lock);
        ok = 0;
        for (size_t i = 0; i < sent; i++) {
            fh_token *t = &fh->tok[i];
            if (t->completions && t->status == OBX_OK) {
                ok++;
            } else if (t->completions) {
                t->completions = 0; /* taken: offered again */
                fh->completions--;
                again++;
                queue[qn++] = i;
            }
        }
        if (up_at && !first_ok_after_up && fh->last_ok_ms > up_at)
            first_ok_after_up = fh->last_ok_ms - up_at;
        pthread_mutex_unlock(&fh->lock);
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
            ok, again, up_at - down_at, (long long)fh->longest_no_ok_ms, first_ok_after_up);
    if (!first_ok_after_up)
        failf("recover: nothing acknowledged after the brokers came back");
    close_checked(inst, fh, "recover");
    msg_set_free(&s);
    fh_free(fh);
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
    fh_free(fh);
}

int main(int argc, char **argv)
{
    const char *driver = NULL, *scenario = argc > 1 ? argv[1] : "";
    args a = {.bootstrap = NULL};
    int opt;

    run_id = (unsigned)(time(NULL) ^ (getpid() << 16));
    optind = 2;
    while ((opt = getopt(argc, argv, "d:b:t:n:e:o:p:K:")) != -1) {
        switch (opt) {
        case 'd': driver = optarg; break;
        case 'b': a.bootstrap = optarg; break;
        case 't': a.topic = optarg; break;
        case 'n': a.n = (size_t)atoll(optarg); break;
        case 'e': a.events = optarg; break;
        case 'o':
            if (a.nopts < MAX_KV)
                a.opts[a.nopts++] = optarg;
            break;
        case 'p':
            if (a.nprops < MAX_KV)
                a.props[a.nprops++] = optarg;
            break;
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
    char err[1024];
    /* never closed: keeps symbols for leak reports; librdkafka holds global state anyway */
    drv = fh_load(driver, err, sizeof err);
    if (!drv) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    def = &drv->def;
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
    else if (!strcmp(scenario, "topics"))
        scenario_topics(&a);
    else if (!strcmp(scenario, "unknown"))
        scenario_unknown(&a);
    else if (!strcmp(scenario, "toolarge"))
        scenario_toolarge(&a);
    else if (!strcmp(scenario, "hang"))
        scenario_hang(&a);
    else if (!strcmp(scenario, "manytopics"))
        scenario_manytopics(&a);
    else if (!strcmp(scenario, "queuefull"))
        scenario_queuefull(&a);
    else if (!strcmp(scenario, "denied"))
        scenario_denied(&a);
    else {
        fprintf(stderr, "kdrv: unknown scenario \"%s\"\n", scenario);
        return 2;
    }
    if (failures)
        fprintf(stderr, "kdrv %s: %d failed checks\n", scenario, failures);
    else
        fprintf(stderr, "kdrv %s: OK\n", scenario);
    return failures ? 1 : 0;
}
