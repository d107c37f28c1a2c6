/*
 * kconsume: test consumer for the Kafka driver's tests.
 *
 *   kconsume -b BOOTSTRAP -t TOPIC -C PARTITIONS     create the topic (admin API) and exit
 *   kconsume -b BOOTSTRAP -t TOPIC [-n N] [-i IDLE_MS] [-h HEADER]... [-k]
 *
 * Reads every partition of TOPIC from the beginning (no consumer group)
 * until N distinct event ids arrived (then on to the partitions' end
 * offsets, so trailing duplicates are seen too) or nothing arrived for
 * IDLE_MS (default 10000).
 * Prints one line per message, tab separated:
 *   partition offset key event_id [value of each -h HEADER]
 * (with -a: every value of each -h HEADER, in order, joined by '|'; "-" when none)
 * and checks every message carries the relay's headers (event_id,
 * event_type, aggregate_type, aggregate_id, created_at in ISO-8601); with
 * -k also that the key equals the aggregate_id header. Exits 1 when a check
 * failed or fewer than N distinct event ids arrived.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "delivery.h"

#define MAX_EXTRA 8
#define MAX_PARTS 1024

static const char *const required_headers[] = {"event_id", "event_type", "aggregate_type",
                                               "aggregate_id", "created_at"};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "kconsume: %s: %s\n", what, why);
    exit(2);
}

static rd_kafka_t *make_client(rd_kafka_type_t type, const char *bootstrap)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err))
        die("config", err);
    if (type == RD_KAFKA_CONSUMER &&
        (rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) ||
         rd_kafka_conf_set(conf, "group.id", "kconsume", err, sizeof err)))
        die("config", err);
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk)
        die("rd_kafka_new", err);
    return rk;
}

static int create_topic(const char *bootstrap, const char *topic, int partitions)
{
    char err[512];
    rd_kafka_t *rk = make_client(RD_KAFKA_PRODUCER, bootstrap);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    int rc = 1;
    if (!nt)
        die("NewTopic", err);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
    if (!ev) {
        fprintf(stderr, "kconsume: CreateTopics timed out\n");
    } else if (rd_kafka_event_error(ev)) {
        fprintf(stderr, "kconsume: CreateTopics: %s\n", rd_kafka_event_error_string(ev));
    } else {
        size_t n;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        rd_kafka_resp_err_t e = n ? rd_kafka_topic_result_error(res[0]) : 0;
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            fprintf(stderr, "kconsume: CreateTopics %s: %s\n", topic, rd_kafka_err2str(e));
        else
            rc = 0;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}

/* Waits until the topic has partitions (it may be created while we wait). */
static int partition_count(rd_kafka_t *rk, const char *topic, long long deadline)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    int n = 0;
    while (now_ms() < deadline) {
        const rd_kafka_metadata_t *md;
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err)
                n = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
            if (n > 0)
                break;
        }
        usleep(200 * 1000);
    }
    rd_kafka_topic_destroy(rkt);
    return n;
}

static int header_text(rd_kafka_headers_t *hdrs, const char *name, char *buf, size_t size)
{
    const void *v;
    size_t len;
    if (!hdrs || rd_kafka_header_get_last(hdrs, name, &v, &len))
        return -1;
    if (!v)
        len = 0;
    if (len >= size)
        len = size - 1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    return 0;
}

/* Every value of name, in order, joined by '|' ("-" when none). */
static void header_all(rd_kafka_headers_t *hdrs, const char *name, char *buf, size_t size)
{
    const void *v;
    size_t len, at = 0;
    for (size_t idx = 0; hdrs && !rd_kafka_header_get(hdrs, idx, name, &v, &len); idx++) {
        if (!v)
            len = 0;
        if (at + len + 2 >= size)
            break;
        if (at)
            buf[at++] = '|';
        memcpy(buf + at, v, len);
        at += len;
    }
    if (!at)
        buf[at++] = '-';
    buf[at] = '\0';
}

static int all_values;

static int iso_time(const char *s)
{
    /* 2024-05-01T12:34:56.123456Z */
    return strlen(s) == 27 && s[4] == '-' && s[10] == 'T' && s[19] == '.' && s[26] == 'Z';
}

/* Prints the message; returns the number of failed checks. */
static int check_message(const rd_kafka_message_t *m, int check_key, const char **extra, int nextra,
                         delivery *seen)
{
    rd_kafka_headers_t *hdrs = NULL;
    char key[512] = "", val[512], agg[512] = "";
    int bad = 0;

    rd_kafka_message_headers(m, &hdrs);
    if (m->key) {
        size_t n = m->key_len < sizeof key - 1 ? m->key_len : sizeof key - 1;
        memcpy(key, m->key, n);
        key[n] = '\0';
    }
    for (size_t i = 0; i < sizeof required_headers / sizeof *required_headers; i++) {
        if (header_text(hdrs, required_headers[i], val, sizeof val) || !*val) {
            fprintf(stderr, "CHECK: p%d o%lld: header %s missing\n", m->partition,
                    (long long)m->offset, required_headers[i]);
            bad++;
        } else if (!strcmp(required_headers[i], "created_at") && !iso_time(val)) {
            fprintf(stderr, "CHECK: p%d o%lld: created_at \"%s\" is not ISO-8601 UTC\n",
                    m->partition, (long long)m->offset, val);
            bad++;
        }
    }
    header_text(hdrs, "aggregate_id", agg, sizeof agg);
    if (check_key && strcmp(key, agg)) {
        fprintf(stderr, "CHECK: p%d o%lld: key \"%s\" != aggregate_id \"%s\"\n", m->partition,
                (long long)m->offset, key, agg);
        bad++;
    }
    if (header_text(hdrs, "event_id", val, sizeof val))
        strcpy(val, "-");
    else
        delivery_add(seen, val, strlen(val), agg, strlen(agg), -1);
    printf("%d\t%lld\t%s\t%s", m->partition, (long long)m->offset, m->key ? key : "-", val);
    for (int i = 0; i < nextra; i++) {
        if (all_values)
            header_all(hdrs, extra[i], val, sizeof val);
        else if (header_text(hdrs, extra[i], val, sizeof val))
            strcpy(val, "-");
        printf("\t%s", val);
    }
    putchar('\n');
    return bad;
}

int main(int argc, char **argv)
{
    const char *bootstrap = NULL, *topic = NULL, *extra[MAX_EXTRA];
    long long want = -1, got = 0;
    int idle_ms = 10000, create = 0, check_key = 0, nextra = 0, bad = 0, opt;

    while ((opt = getopt(argc, argv, "b:t:n:i:h:kaC:")) != -1) {
        switch (opt) {
        case 'b': bootstrap = optarg; break;
        case 't': topic = optarg; break;
        case 'n': want = atoll(optarg); break;
        case 'i': idle_ms = atoi(optarg); break;
        case 'k': check_key = 1; break;
        case 'a': all_values = 1; break;
        case 'C': create = atoi(optarg); break;
        case 'h':
            if (nextra < MAX_EXTRA)
                extra[nextra++] = optarg;
            break;
        default: fprintf(stderr, "usage: see the comment at the top of kconsume.c\n"); return 2;
        }
    }
    if (!bootstrap || !topic)
        die("usage", "-b BOOTSTRAP and -t TOPIC are required");
    if (create)
        return create_topic(bootstrap, topic, create);

    rd_kafka_t *rk = make_client(RD_KAFKA_CONSUMER, bootstrap);
    int parts = partition_count(rk, topic, now_ms() + idle_ms);
    if (parts <= 0)
        die(topic, "topic not found");
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(tp, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    if (rd_kafka_assign(rk, tp))
        die("assign", "failed");
    rd_kafka_topic_partition_list_destroy(tp);

    long long last = now_ms();
    int64_t next[MAX_PARTS], high[MAX_PARTS];
    int at_end = 0; /* N distinct reached: read on to the end offsets seen then */
    delivery *seen = delivery_new("kconsume");
    for (int p = 0; p < parts && p < MAX_PARTS; p++)
        next[p] = 0;
    while (now_ms() - last < idle_ms) {
        if (want >= 0 && !at_end && (long long)delivery_unique(seen) >= want) {
            at_end = 1;
            for (int p = 0; p < parts && p < MAX_PARTS; p++) {
                int64_t lo;
                if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &high[p], 10000))
                    high[p] = 0;
            }
        }
        if (at_end) {
            int done = 1;
            for (int p = 0; p < parts && p < MAX_PARTS; p++)
                done &= next[p] >= high[p];
            if (done)
                break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, "kconsume: %s\n", rd_kafka_message_errstr(m));
        } else {
            bad += check_message(m, check_key, extra, nextra, seen);
            if (m->partition >= 0 && m->partition < MAX_PARTS)
                next[m->partition] = m->offset + 1;
            got++;
            last = now_ms();
        }
        rd_kafka_message_destroy(m);
    }
    fflush(stdout);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    fprintf(
        stderr,
        "kconsume: %s: %lld messages, %zu distinct event ids, %zu duplicates (%d partitions), %d "
        "failed checks\n",
        topic, got, delivery_unique(seen), delivery_duplicates(seen), parts, bad);
    size_t distinct = delivery_unique(seen);
    delivery_free(seen);
    if (bad || (want >= 0 && (long long)distinct < want))
        return 1;
    return 0;
}
