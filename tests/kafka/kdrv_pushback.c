/*
 * kdrv scenarios of whose fault an answer is (drivers/kafka/README.md, the
 * table): pushback is the output's state, one event's problem stays that
 * event's.
 *
 *   topics    illegal topic names are refused PERMANENT with the reason;
 *             legal ones in the same batch are delivered (shared mock)
 *   unknown   events to a topic the cluster says it does not have fail on
 *             their own; once librdkafka knows, later ones are refused at
 *             publish; once the topic is there they are delivered
 *             (in-process mock)
 *   toolarge  a produce request answered MSG_SIZE_TOO_LARGE: its small
 *             messages complete UNAVAILABLE and are delivered once offered
 *             again; a message the broker refuses alone is PERMANENT
 *             (in-process mock)
 *   hang      a private kmock stopped (SIGSTOP: connected, never answering)
 *             for KDRV_HANG_MS (60 s) under a steady stream: no completion
 *             other than OK or UNAVAILABLE, every message acknowledged after
 *             it answers (-K KMOCK_PID)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "kdrv.h"

#define KDRV_API_PRODUCE 0 /* the Kafka protocol's ApiKey of Produce */

/* ------------------------------------------------------------ in-process mock */
typedef struct mock {
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
} mock;

static void mock_start(mock *mk)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    mk->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!mk->rk || !(mk->mc = rd_kafka_mock_cluster_new(mk->rk, 1))) {
        fprintf(stderr, "FAIL: mock cluster: %s\n", err);
        exit(1);
    }
    snprintf(mk->bootstrap, sizeof mk->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(mk->mc));
}

static void mock_stop(mock *mk)
{
    rd_kafka_mock_cluster_destroy(mk->mc);
    rd_kafka_destroy(mk->rk);
}

/* A host on the mock, with the command line's options and properties. */
static fake_host *fake_on(const args *a, const char *bootstrap, size_t cap)
{
    args b = *a;
    b.bootstrap = bootstrap;
    return fake_from(&b, cap);
}

/* Completions that are not OK go back to pending: what a host does. */
static size_t take_failed(fake_host *fh, size_t from, size_t to, obx_status status)
{
    size_t n = 0;
    pthread_mutex_lock(&fh->lock);
    for (size_t i = from; i < to; i++) {
        fh_token *t = &fh->tok[i];
        if (t->completions && t->status == status) {
            t->completions = 0;
            fh->completions--;
            n++;
        }
    }
    pthread_mutex_unlock(&fh->lock);
    return n;
}

/* ------------------------------------------------------------ topics */
void scenario_topics(const args *a)
{
    static const struct {
        const char *topic;
        int legal;
    } cases[] = {
        {NULL, 1}, /* a->topic */
        {".", 0},
        {"..", 0},
        {"orders created", 0},
        {"orders/created", 0},
        {"t\xc3\xa9st", 0},
        {"Ok.name-1_X", 1},
        {NULL, 0}, /* 250 characters */
        {NULL, 1}, /* 249 characters */
    };
    size_t n = sizeof cases / sizeof *cases;
    char long_bad[251], long_ok[250];
    msg_set s;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    obx_status accept[16];

    memset(long_bad, 'x', 250);
    long_bad[250] = '\0';
    memset(long_ok, 'y', 249);
    long_ok[249] = '\0';
    msgs_init(&s, n, a->topic, 11);
    for (size_t i = 0; i < n; i++) /* one aggregate each: no refusal holds another back */
        s.m[i].destination = i == 0   ? a->topic
                             : i == 7 ? long_bad
                             : i == 8 ? long_ok
                                      : cases[i].topic;
    publish(inst, fh, s.m, n, accept);
    fh_wait_settled(fh, inst, 30000);
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[i];
        if (cases[i].legal && (accept[i] != OBX_OK || t->status != OBX_OK || !t->completions))
            failf("topics: legal topic %zu not delivered: accept %d, status %d \"%s\"", i,
                  accept[i], t->status, t->detail);
        if (!cases[i].legal &&
            (accept[i] != OBX_PERMANENT || !strstr(t->detail, "illegal topic name")))
            failf("topics: illegal topic %zu: accept %d \"%s\" (want PERMANENT, illegal topic "
                  "name)",
                  i, accept[i], t->detail);
        if (!cases[i].legal)
            fprintf(stderr, "topics: refused %d: %s\n", accept[i], t->detail);
    }
    close_checked(inst, fh, "topics");
    msg_set_free(&s);
    fh_free(fh);
}

/* ------------------------------------------------------------ unknown */
#define UNKNOWN_EVERY 10 /* one message in ten goes to the unknown topic */

void scenario_unknown(const args *a)
{
    mock mk;
    size_t n = 60, lost = 0;
    msg_set s;
    obx_status accept[60];
    const char *nosuch = "kt.nosuch";

    mock_start(&mk);
    rd_kafka_mock_topic_create(mk.mc, a->topic, 3, 1);
    /* the mock creates any topic asked for (its Metadata version ignores
     * allow.auto.create.topics): the topic exists but answers that it does not */
    rd_kafka_mock_topic_create(mk.mc, nosuch, 1, 1);
    rd_kafka_mock_topic_set_error(mk.mc, nosuch, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    fake_host *fh = fake_on(a, mk.bootstrap, 3 * n);
    obx_instance *inst = create_ok(fh);
    msgs_init(&s, 3 * n, a->topic, 12);
    for (size_t i = 0; i < 3 * n; i++)
        if (i % UNKNOWN_EVERY == 0) { /* an aggregate of its own */
            s.m[i].destination = nosuch;
            snprintf(s.text[i].aggregate_id, sizeof s.text[i].aggregate_id, "lost-%zu", i);
        }

    /* 1: the first batch; librdkafka learns that the topic does not exist */
    long long t0 = kdrv_now_ms(), t_known = 0;
    if (publish(inst, fh, s.m, n, accept) != n)
        failf("unknown: first batch: not all accepted");
    while (fh_in_flight(fh) > 0 && kdrv_now_ms() - t0 < 60000) {
        def->poll(inst, 10);
        size_t known = 0;
        for (size_t i = 0; i < n; i++)
            known += i % UNKNOWN_EVERY && fh->tok[i].completions;
        if (!t_known && known == n - n / UNKNOWN_EVERY)
            t_known = kdrv_now_ms() - t0;
    }
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[i];
        int to_lost = i % UNKNOWN_EVERY == 0;
        if (!to_lost && (t->status != OBX_OK || t->completions != 1))
            failf("unknown: event %zu to a known topic: status %d \"%s\"", i, t->status, t->detail);
        if (to_lost && (t->status != OBX_RETRIABLE || !strstr(t->detail, "Unknown topic")))
            failf("unknown: event %zu to the unknown topic: status %d \"%s\" (want RETRIABLE, "
                  "Unknown topic)",
                  i, t->status, t->detail);
        lost += to_lost;
    }
    fprintf(stderr,
            "unknown: first batch: %zu events to known topics completed in %lld ms, the %zu to "
            "the unknown one in %lld ms: \"%s\"\n",
            n - lost, t_known, lost, kdrv_now_ms() - t0, fh->tok[0].detail);

    /* 2: the next batch: the unknown topic's events are refused at once */
    publish(inst, fh, s.m + n, n, accept);
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[n + i];
        int to_lost = (n + i) % UNKNOWN_EVERY == 0;
        if (to_lost && (accept[i] != OBX_RETRIABLE || !strstr(t->detail, "does not exist")))
            failf("unknown: second batch: event %zu: accept %d \"%s\" (want refused RETRIABLE, "
                  "does not exist)",
                  n + i, accept[i], t->detail);
        if (!to_lost && accept[i] != OBX_OK)
            failf("unknown: second batch: event %zu to a known topic refused %d \"%s\"", n + i,
                  accept[i], t->detail);
    }
    fprintf(stderr, "unknown: second batch: refused at publish: \"%s\"\n", fh->tok[n].detail);
    fh_wait_settled(fh, inst, 30000);
    if (fh_count_status(fh, n, 2 * n, OBX_OK) != n - n / UNKNOWN_EVERY)
        failf("unknown: second batch: %zu of %zu known-topic events OK",
              fh_count_status(fh, n, 2 * n, OBX_OK), n - n / UNKNOWN_EVERY);

    /* 3: the topic is created: its events are delivered (librdkafka asks
     * again about a topic without partitions every second) */
    rd_kafka_mock_topic_set_error(mk.mc, nosuch, RD_KAFKA_RESP_ERR_NO_ERROR);
    size_t rounds = 0, last_ok = 0;
    long long t_created = kdrv_now_ms();
    while (kdrv_now_ms() - t_created < 60000) {
        /* offer the unknown topic's events of the third set again, as the host retries */
        take_failed(fh, 2 * n, 3 * n, OBX_RETRIABLE);
        for (size_t i = 2 * n; i < 3 * n; i += UNKNOWN_EVERY) {
            const fh_token *t = &fh->tok[i];
            if (!t->completions && !t->in_flight)
                publish(inst, fh, &s.m[i], 1, accept);
        }
        fh_wait_settled(fh, inst, 5000);
        rounds++;
        if ((last_ok = fh_count_status(fh, 2 * n, 3 * n, OBX_OK)) == n / UNKNOWN_EVERY)
            break;
        fh_sleep_ms(200);
    }
    if (last_ok != n / UNKNOWN_EVERY)
        failf("unknown: after the topic was created: %zu of %zu delivered", last_ok,
              n / UNKNOWN_EVERY);
    fprintf(stderr, "unknown: topic created: its events delivered after %zu offers, %lld ms\n",
            rounds, kdrv_now_ms() - t_created);
    close_checked(inst, fh, "unknown");
    msg_set_free(&s);
    fh_free(fh);
    mock_stop(&mk);
}

/* ------------------------------------------------------------ toolarge */
void scenario_toolarge(const args *a)
{
    mock mk;
    size_t n = 33, unavailable = 0;
    msg_set s;
    obx_status accept[34];

    mock_start(&mk);
    rd_kafka_mock_topic_create(mk.mc, a->topic, 1, 1);
    fake_host *fh = fake_on(a, mk.bootstrap, n + 1);
    obx_instance *inst = create_ok(fh);
    msgs_init(&s, n + 1, a->topic, 13);

    /* the cluster knows the producer first: the answer is for a Produce request */
    if (def->probe(inst, 5000) != OBX_OK)
        failf("toolarge: the mock does not answer");
    rd_kafka_mock_push_request_errors(mk.mc, KDRV_API_PRODUCE, 1,
                                      RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    if (publish(inst, fh, s.m, n, accept) != n)
        failf("toolarge: not all accepted");
    fh_wait_settled(fh, inst, 30000);
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[i];
        if (t->status == OBX_UNAVAILABLE && strstr(t->detail, "sent alone"))
            unavailable++;
        else if (t->status != OBX_OK)
            failf("toolarge: message %zu: status %d \"%s\" (want OK or UNAVAILABLE)", i, t->status,
                  t->detail);
    }
    fprintf(stderr,
            "toolarge: %zu of %zu small messages answered too large with their batch: "
            "\"%s\"\n",
            unavailable, n, fh->last_detail);
    if (!unavailable)
        failf("toolarge: the injected answer reached no message");

    /* offered again, they go one per batch: delivered */
    take_failed(fh, 0, n, OBX_UNAVAILABLE);
    for (size_t i = 0; i < n; i++)
        if (!fh->tok[i].completions)
            publish(inst, fh, &s.m[i], 1, accept);
    fh_wait_settled(fh, inst, 30000);
    if (fh_count_status(fh, 0, n, OBX_OK) != n)
        failf("toolarge: %zu of %zu delivered after being offered again",
              fh_count_status(fh, 0, n, OBX_OK), n);

    /* one message the broker refuses alone too: PERMANENT with its size */
    const size_t x = n;
    rd_kafka_mock_push_request_errors(mk.mc, KDRV_API_PRODUCE, 1,
                                      RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    publish(inst, fh, &s.m[x], 1, accept);
    fh_wait_settled(fh, inst, 30000);
    if (fh->tok[x].status != OBX_UNAVAILABLE)
        failf("toolarge: first answer: status %d \"%s\" (want UNAVAILABLE)", fh->tok[x].status,
              fh->tok[x].detail);
    take_failed(fh, x, x + 1, OBX_UNAVAILABLE);
    rd_kafka_mock_push_request_errors(mk.mc, KDRV_API_PRODUCE, 1,
                                      RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    publish(inst, fh, &s.m[x], 1, accept);
    fh_wait_settled(fh, inst, 30000);
    if (fh->tok[x].status != OBX_PERMANENT || !strstr(fh->tok[x].detail, "refused alone"))
        failf("toolarge: alone: status %d \"%s\" (want PERMANENT, refused alone)",
              fh->tok[x].status, fh->tok[x].detail);
    fprintf(stderr, "toolarge: refused alone: %d \"%s\"\n", fh->tok[x].status, fh->tok[x].detail);
    close_checked(inst, fh, "toolarge");
    msg_set_free(&s);
    fh_free(fh);
    mock_stop(&mk);
}

/* ------------------------------------------------------------ hang */
#define HANG_IN_FLIGHT_MAX 1000 /* what a host with a few batches out has in flight */
#define HANG_PROBE_EVERY_MS 1000

/* What is hung: the private kmock process (SIGSTOP), or with -K absent one
 * broker of an in-process 3-broker mock (its answers delayed an hour). */
typedef struct hang_target {
    pid_t kmock;
    mock mk;
} hang_target;

static void hang_set(hang_target *h, int hung)
{
    if (h->kmock > 0)
        kill(h->kmock, hung ? SIGSTOP : SIGCONT);
    else
        rd_kafka_mock_broker_set_rtt(h->mk.mc, 1, hung ? 3600 * 1000 : 0);
}

void scenario_hang(const args *a)
{
    hang_target h = {.kmock = a->kmock};
    if (h.kmock <= 0) { /* one broker of three: the others keep answering */
        char err[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
        h.mk.rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!h.mk.rk || !(h.mk.mc = rd_kafka_mock_cluster_new(h.mk.rk, 3))) {
            fprintf(stderr, "FAIL: mock cluster: %s\n", err);
            exit(1);
        }
        snprintf(h.mk.bootstrap, sizeof h.mk.bootstrap, "%s",
                 rd_kafka_mock_cluster_bootstraps(h.mk.mc));
        rd_kafka_mock_topic_create(h.mk.mc, a->topic, 6, 1);
        for (int p = 0; p < 6; p++) /* partitions 0, 3 led by the broker that hangs */
            rd_kafka_mock_partition_set_leader(h.mk.mc, a->topic, p, 1 + p % 3);
    }
    size_t n = a->n ? a->n : 20000, sent = 0, ok = 0, unavailable = 0, charged = 0, probes = 0;
    fake_host *fh = h.kmock > 0 ? fake_from(a, n) : fake_on(a, h.mk.bootstrap, n);
    obx_instance *inst = create_ok(fh);
    obx_status accept[20];
    msg_set s;
    const char *env = getenv("KDRV_HANG_MS");
    long long hang_ms = env ? atoll(env) : 60000;
    long long t0 = kdrv_now_ms(), stop_at = 0, cont_at = 0, paused_at = 0, last_probe = 0;
    long long pause_total = 0;
    size_t *queue = malloc((2 * n + 20) * sizeof *queue), qn = 0, next = 0;
    int paused = 0;

    msgs_init(&s, n, a->topic, 14);
    for (;;) {
        long long now = kdrv_now_ms();
        if (!stop_at && now - t0 >= 2000) {
            hang_set(&h, 1);
            stop_at = now;
            fprintf(stderr, "hang: brokers STOPPED with %zu sent\n", sent);
        }
        if (stop_at && !cont_at && now - stop_at >= hang_ms) {
            hang_set(&h, 0);
            cont_at = now;
            fprintf(stderr, "hang: brokers CONTINUED, %zu acknowledged\n", ok);
        }
        if (paused && now - last_probe >= HANG_PROBE_EVERY_MS) {
            last_probe = now;
            probes++;
            if (def->probe(inst, 1000) == OBX_OK) {
                paused = 0;
                pause_total += kdrv_now_ms() - paused_at;
                fprintf(stderr, "hang: probe OK after %lld ms paused\n", kdrv_now_ms() - paused_at);
            }
        }
        if (!paused && fh_in_flight(fh) < HANG_IN_FLIGHT_MAX) {
            obx_message batch[20];
            size_t bn = 0;
            while (bn < 20 && next < qn)
                batch[bn++] = s.m[queue[next++]];
            /* a steady stream: 20 fresh messages per 10 ms of the run */
            size_t due = (size_t)((now - t0) / 10 + 1) * 20;
            while (bn < 20 && sent < n && sent < due)
                batch[bn++] = s.m[sent++];
            if (bn) {
                fh_publish(fh, inst, batch, bn, accept);
                for (size_t i = 0; i < bn; i++) {
                    if (accept[i] == OBX_OK)
                        continue;
                    if (accept[i] == OBX_UNAVAILABLE) {
                        unavailable++;
                    } else {
                        charged++;
                        failf("hang: refused %d \"%s\"", accept[i], fh->last_refusal);
                    }
                    queue[qn++] = batch[i].token;
                    if (!paused) {
                        paused = 1;
                        paused_at = last_probe = kdrv_now_ms();
                    }
                }
            }
        }
        def->poll(inst, 10);
        pthread_mutex_lock(&fh->lock);
        ok = 0;
        for (size_t i = 0; i < sent; i++) {
            fh_token *t = &fh->tok[i];
            if (t->completions && t->status == OBX_OK) {
                ok++;
            } else if (t->completions) {
                if (t->status == OBX_UNAVAILABLE) {
                    unavailable++;
                } else {
                    if (charged++ < 3)
                        failf("hang: token %zu completed %d \"%s\" (an attempt counted)", i,
                              t->status, t->detail);
                }
                if (!paused) {
                    paused = 1;
                    paused_at = last_probe = kdrv_now_ms();
                }
                t->completions = 0; /* taken: offered again */
                fh->completions--;
                queue[qn++] = i;
            }
        }
        pthread_mutex_unlock(&fh->lock);
        if (next == qn) {
            next = qn = 0;
        } else if (qn > n) {
            memmove(queue, queue + next, (qn - next) * sizeof *queue);
            qn -= next;
            next = 0;
        }
        if (cont_at && sent == n && ok == n)
            break;
        if (now - t0 > hang_ms + 180000) {
            failf("hang: %zu of %zu acknowledged %lld ms after the brokers continued", ok, n,
                  now - cont_at);
            break;
        }
    }
    if (!cont_at) {
        hang_set(&h, 0);
        failf("hang: finished before the brokers were stopped and continued");
    }
    if (!unavailable)
        failf("hang: no message met the hang (none completed or refused UNAVAILABLE)");
    fprintf(stderr,
            "hang: %zu/%zu acknowledged; brokers hung %lld ms; %zu UNAVAILABLE (offered again, "
            "no attempt), %zu charged to events (RETRIABLE/PERMANENT); paused %lld ms in all, "
            "%zu probes; all acknowledged %lld ms after the brokers answered again; "
            "last detail \"%s\"\n",
            ok, n, cont_at - stop_at, unavailable, charged, pause_total, probes,
            kdrv_now_ms() - cont_at, fh->last_detail);
    write_events(a->events, fh, &s);
    close_checked(inst, fh, "hang");
    msg_set_free(&s);
    fh_free(fh);
    free(queue);
    const char *consume = getenv("KDRV_CONSUME_TO"); /* the consumer reads the in-process mock */
    if (h.kmock <= 0 && consume && getenv("KCONSUME")) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "\"%s\" -b %s -t %s -i 10000 -k > \"%s\"", getenv("KCONSUME"),
                 h.mk.bootstrap, a->topic, consume);
        if (system(cmd) != 0)
            failf("hang: consumer failed: %s", cmd);
    }
    if (h.kmock <= 0)
        mock_stop(&h.mk);
}

/* ------------------------------------------------------------ manytopics */
static long rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *fp = fopen("/proc/self/status", "r");
    while (fp && fgets(line, sizeof line, fp))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (fp)
        fclose(fp);
    return kb;
}

/* One message to each of N distinct topics (TOPIC.0, TOPIC.1, ...): all OK;
 * prints the process's resident memory before and after (a figure). */
void scenario_manytopics(const args *a)
{
    size_t n = a->n ? a->n : 10000;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    msg_set s;
    obx_status accept[500];
    char(*names)[96] = calloc(n, sizeof *names);

    msgs_init(&s, n, a->topic, 15);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s.%zu", a->topic, i);
        s.m[i].destination = names[i];
    }
    /* one topic first: the producer and its connections are up */
    publish(inst, fh, s.m, 1, accept);
    fh_wait_settled(fh, inst, 30000);
    long before = rss_kb();
    long long t0 = kdrv_now_ms();
    for (size_t i = 1; i < n; i += 500) {
        size_t c = n - i < 500 ? n - i : 500;
        publish(inst, fh, s.m + i, c, accept);
        fh_wait_settled(fh, inst, 60000);
    }
    long after = rss_kb();
    size_t ok = fh_count_status(fh, 0, n, OBX_OK);
    fprintf(stderr,
            "manytopics: %zu/%zu delivered to %zu topics in %lld ms; resident %ld KB before, %ld "
            "KB after: %.1f KB per topic\n",
            ok, n, n, kdrv_now_ms() - t0, before, after, (double)(after - before) / (double)n);
    if (ok != n)
        failf("manytopics: %zu of %zu delivered: \"%s\"", ok, n, fh->last_detail);
    close_checked(inst, fh, "manytopics");
    msg_set_free(&s);
    fh_free(fh);
    free(names);
}

/* ------------------------------------------------------------ queuefull */
/* librdkafka's local queue holds 10 messages (queue.buffering.max.messages
 * from the command line): of a batch of 50 the rest is refused UNAVAILABLE
 * (pushback), and offered again everything is delivered. */
void scenario_queuefull(const args *a)
{
    size_t n = 50, refused = 0, rounds = 0;
    fake_host *fh = fake_from(a, n);
    obx_instance *inst = create_ok(fh);
    msg_set s;
    obx_status accept[50];

    msgs_init(&s, n, a->topic, 16);
    publish(inst, fh, s.m, n, accept);
    for (size_t i = 0; i < n; i++) {
        if (accept[i] == OBX_OK)
            continue;
        refused++;
        if (accept[i] != OBX_UNAVAILABLE || !strstr(fh->tok[i].detail, "ueue full"))
            failf("queuefull: message %zu refused %d \"%s\" (want UNAVAILABLE, queue full)", i,
                  accept[i], fh->tok[i].detail);
    }
    fprintf(stderr, "queuefull: %zu of %zu refused: \"%s\"\n", refused, n, fh->last_refusal);
    if (!refused)
        failf("queuefull: nothing refused with a queue of 10");
    while (fh_count_status(fh, 0, n, OBX_OK) < n && rounds++ < 100) {
        fh_wait_settled(fh, inst, 10000);
        for (size_t i = 0; i < n; i++) /* refused: offered again, one batch at a time */
            if (!fh->tok[i].completions && !fh->tok[i].in_flight)
                publish(inst, fh, &s.m[i], 1, accept);
    }
    fh_wait_settled(fh, inst, 10000);
    if (fh_count_status(fh, 0, n, OBX_OK) != n)
        failf("queuefull: %zu of %zu delivered", fh_count_status(fh, 0, n, OBX_OK), n);
    close_checked(inst, fh, "queuefull");
    msg_set_free(&s);
    fh_free(fh);
}

/* ------------------------------------------------------------ denied */
/* A produce request answered TOPIC_AUTHORIZATION_FAILED (in-process mock):
 * RETRIABLE by default, PERMANENT with -o authorization_permanent=true
 * (KDRV_WANT_PERMANENT=1 says which is expected). */
void scenario_denied(const args *a)
{
    mock mk;
    size_t n = 5;
    msg_set s;
    obx_status accept[5];
    const char *env = getenv("KDRV_WANT_PERMANENT");
    obx_status want = env && *env == '1' ? OBX_PERMANENT : OBX_RETRIABLE;

    mock_start(&mk);
    rd_kafka_mock_topic_create(mk.mc, a->topic, 1, 1);
    fake_host *fh = fake_on(a, mk.bootstrap, n);
    obx_instance *inst = create_ok(fh);
    msgs_init(&s, n, a->topic, 17);
    if (def->probe(inst, 5000) != OBX_OK)
        failf("denied: the mock does not answer");
    rd_kafka_mock_push_request_errors(mk.mc, KDRV_API_PRODUCE, 1,
                                      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    publish(inst, fh, s.m, n, accept);
    fh_wait_settled(fh, inst, 30000);
    size_t denied = 0;
    for (size_t i = 0; i < n; i++) {
        const fh_token *t = &fh->tok[i];
        if (t->status == want && strstr(t->detail, "uthorization"))
            denied++;
        else if (t->status != OBX_OK)
            failf("denied: message %zu: %d \"%s\" (want %d)", i, t->status, t->detail, want);
    }
    fprintf(stderr, "denied: %zu of %zu completed %d: \"%s\"\n", denied, n, want, fh->last_detail);
    if (!denied)
        failf("denied: the injected answer reached no message");
    close_checked(inst, fh, "denied");
    msg_set_free(&s);
    fh_free(fh);
    mock_stop(&mk);
}
