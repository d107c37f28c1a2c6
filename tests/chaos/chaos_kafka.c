/*
 * chaos_kafka: records every message of a topic (all partitions, from
 * offset 0, no consumer group) as history lines (history.h) until SIGTERM.
 * It consumes while the relay produces: the mock cluster keeps only a few
 * MB per partition.
 *
 *   chaos_kafka -b BOOTSTRAP -t TOPIC -o HISTORY_FILE
 */
#include <signal.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "history.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void header(rd_kafka_headers_t *h, const char *name, char *buf, size_t size)
{
    const void *v;
    size_t len;
    buf[0] = '\0';
    if (!h || rd_kafka_header_get_last(h, name, &v, &len) || !v)
        return;
    if (len >= size)
        len = size - 1;
    memcpy(buf, v, len);
    buf[len] = '\0';
}

int main(int argc, char **argv)
{
    const char *bootstrap = NULL, *topic = NULL, *path = NULL;
    char err[512];
    int opt;
    while ((opt = getopt(argc, argv, "b:t:o:")) != -1) {
        switch (opt) {
        case 'b': bootstrap = optarg; break;
        case 't': topic = optarg; break;
        case 'o': path = optarg; break;
        default: return 2;
        }
    }
    if (!bootstrap || !topic || !path) {
        fprintf(stderr, "usage: chaos_kafka -b BOOTSTRAP -t TOPIC -o FILE\n");
        return 2;
    }
    FILE *out = fopen(path, "a");
    if (!out) {
        perror(path);
        return 2;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", "chaos", err, sizeof err) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) ||
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof err) ||
        rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) ||
        /* back within half a second of the brokers' return: with librdkafka's
         * default (up to 10 s) the relays could drain while this consumer still
         * waited to reconnect, and the run settled without what it had not read */
        rd_kafka_conf_set(conf, "reconnect.backoff.ms", "50", err, sizeof err) ||
        rd_kafka_conf_set(conf, "reconnect.backoff.max.ms", "500", err, sizeof err)) {
        fprintf(stderr, "chaos_kafka: %s\n", err);
        return 2;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "chaos_kafka: %s\n", err);
        return 2;
    }
    /* the partition count, waiting for the topic */
    int parts = 0;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    while (!stop && parts <= 0) {
        const rd_kafka_metadata_t *md;
        if (!rd_kafka_metadata(rk, 0, rkt, &md, 5000)) {
            if (md->topic_cnt == 1 && !md->topics[0].err)
                parts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (parts <= 0)
            usleep(200 * 1000);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(tp, topic, p)->offset = 0;
    if (rd_kafka_assign(rk, tp)) {
        fprintf(stderr, "chaos_kafka: assign failed\n");
        return 2;
    }
    rd_kafka_topic_partition_list_destroy(tp);
    long long got = 0;
    while (!stop) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, "chaos_kafka: %s\n", rd_kafka_message_errstr(m));
        } else {
            rd_kafka_headers_t *h = NULL;
            char eid[128], agg[128];
            rd_kafka_message_headers(m, &h);
            header(h, "event_id", eid, sizeof eid);
            header(h, "aggregate_id", agg, sizeof agg);
            history_write(out, eid, agg, history_seq(m->payload, m->len), 0);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    fclose(out);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    fprintf(stderr, "chaos_kafka: %lld messages\n", got);
    return 0;
}
