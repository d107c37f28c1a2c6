/*
 * bench_broker: the broker limit. The same client library the driver uses
 * publishes the same messages (200-byte JSON payload, the five event headers,
 * key = aggregate id) with the same acknowledgement, and no database. W
 * threads, one client each (the relay has one driver instance per worker),
 * each publishing its share in windows of B messages and waiting for every
 * acknowledgement of a window before the next (the relay's batch cycle).
 *
 *   bench_broker kafka    -u BOOTSTRAP -t TOPIC      [-n N] [-w W] [-b B]
 *   bench_broker rabbitmq -u AMQP_URL  -t EXCHANGE -q QUEUE [-n N] [-w W] [-b B]
 *   bench_broker mqtt     -u MQTT_URL  -t TOPIC      [-n N] [-w W] [-b B] [-i I] [-a A] [-p]
 *   bench_broker rabbitmq-purge -u AMQP_URL -q QUEUE   (empties the bench queue)
 *
 * kafka: idempotent producer (acks=all), success = delivery report without
 * error. rabbitmq: confirm mode, persistent, mandatory, success = basic.ack
 * (a basic.return or nack is a failure). mqtt: MQTT 5, QoS 1, at most I
 * (default 64, the driver's max_in_flight) of a window unacknowledged, the next
 * sent from the acknowledgement callback as the driver does; success = onSuccess5; -p
 * sends each aggregate to its own topic (TOPIC/Order/<aggregate id>, the relay's
 * per-aggregate route) and the relay's aggregate_seq property too. Messages go to
 * A aggregates (default 1,000) in turn. Prints "events
 * seconds events_per_second"; any failed message makes the exit status 1.
 *
 * With -r RATE -s SECONDS (one client): the broker's own latency at a steady
 * rate. Every millisecond the messages now due go out as one window; a
 * message's latency runs from the moment it was due to the acknowledgement of
 * its window, as the relay's does. Prints "p50 p95 p99 max" in milliseconds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <MQTTAsync.h>
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <librdkafka/rdkafka.h>

static const char *url, *topic, *queue = "obx.bench";
static long count = 50000;
static int workers = 1, window_size = 500, aggregates = 1000, per_aggregate;
static atomic_long failures;

typedef struct {
    char event_id[40], aggregate_id[24], aggregate_seq[24], created_at[40], payload[256];
    int payload_len;
} message;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The relay's messages: what enqueue_bulk-style rows render to. */
static void make_message(message *m, int thread, long seq)
{
    snprintf(m->event_id, sizeof m->event_id, "00000000-0000-4000-8000-%04x%08lx", thread & 0xffff,
             (unsigned long)seq & 0xffffffffUL);
    snprintf(m->aggregate_id, sizeof m->aggregate_id, "agg-%ld", seq % aggregates);
    snprintf(m->aggregate_seq, sizeof m->aggregate_seq, "%ld", seq / aggregates + 1);
    snprintf(m->created_at, sizeof m->created_at, "2024-01-01T00:00:00.000000Z");
    m->payload_len =
        snprintf(m->payload, sizeof m->payload, "{\"n\": %ld, \"pad\": \"%.*s\"}", seq, 180,
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
}

static long share(int index)
{
    return count / workers + (index < count % workers ? 1 : 0);
}

/* ---- pacing (rate mode) and the size of each window ---- */

static double rate, started, *latency_ms;

static double due_at(long seq)
{
    return started + seq / rate;
}

/* How many messages the next window holds; in rate mode, waits until one is due. */
static long next_window(long sent, long n)
{
    long w = n - sent < window_size ? n - sent : window_size;
    if (rate <= 0)
        return w;
    double now = now_s();
    while (now < due_at(sent)) {
        usleep(200);
        now = now_s();
    }
    long due = (long)((now - started) * rate) + 1 - sent; /* now >= started */
    return due < w ? due : w;
}

/* Every message of the window [first, first + w) is acknowledged now. */
static void window_acknowledged(long first, long w)
{
    if (rate <= 0)
        return;
    double now = now_s();
    for (long i = first; i < first + w; i++)
        latency_ms[i] = (now - due_at(i)) * 1000.0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_latency(void)
{
    qsort(latency_ms, (size_t)count, sizeof *latency_ms, by_value);
    const double at[] = {0.50, 0.95, 0.99};
    for (int i = 0; i < 3; i++)
        printf("%.1f ", latency_ms[(long)(at[i] * (count - 1))]);
    printf("%.1f\n", latency_ms[count - 1]);
}

/* ---------------------------------------------------------------- kafka */

typedef struct {
    atomic_long outstanding;
} kafka_state;

static void kafka_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    kafka_state *st = opaque;
    if (m->err || rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_PERSISTED)
        atomic_fetch_add(&failures, 1);
    atomic_fetch_sub(&st->outstanding, 1);
}

static void *kafka_worker(void *arg)
{
    int index = (int)(long)arg;
    char err[512];
    kafka_state st = {0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", url, err, sizeof err) ||
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err) ||
        rd_kafka_conf_set(conf, "acks", "all", err, sizeof err) ||
        rd_kafka_conf_set(conf, "partitioner", "murmur2_random", err, sizeof err) ||
        rd_kafka_conf_set(conf, "linger.ms", "1", err, sizeof err)) { /* the driver's default */
        fprintf(stderr, "bench_broker: kafka conf: %s\n", err);
        exit(1);
    }
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_conf_set_dr_msg_cb(conf, kafka_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "bench_broker: kafka: %s\n", err);
        exit(1);
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    message m;
    long n = share(index);
    for (long sent = 0; sent < n;) {
        long w = next_window(sent, n);
        for (long k = 0; k < w; k++, sent++) {
            make_message(&m, index, sent);
            atomic_fetch_add(&st.outstanding, 1);
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_VALUE(m.payload, (size_t)m.payload_len),
                RD_KAFKA_V_KEY(m.aggregate_id, strlen(m.aggregate_id)),
                RD_KAFKA_V_HEADER("event_id", m.event_id, -1),
                RD_KAFKA_V_HEADER("event_type", "order.created", -1),
                RD_KAFKA_V_HEADER("aggregate_type", "Order", -1),
                RD_KAFKA_V_HEADER("aggregate_id", m.aggregate_id, -1),
                RD_KAFKA_V_HEADER("created_at", m.created_at, -1), RD_KAFKA_V_END);
            if (e) {
                atomic_fetch_sub(&st.outstanding, 1);
                atomic_fetch_add(&failures, 1);
            }
        }
        while (atomic_load(&st.outstanding) > 0)
            rd_kafka_poll(rk, 1);
        window_acknowledged(sent - w, w);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return NULL;
}

/* ---------------------------------------------------------------- rabbitmq */

static void rmq_check(amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "bench_broker: rabbitmq %s failed (reply type %d)\n", what, r.reply_type);
        exit(1);
    }
}

static amqp_connection_state_t rmq_connect(void)
{
    struct amqp_connection_info ci;
    char *copy = strdup(url);
    if (amqp_parse_url(copy, &ci) != AMQP_STATUS_OK) {
        fprintf(stderr, "bench_broker: bad AMQP URL\n");
        exit(2);
    }
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (amqp_socket_open(s, ci.host, ci.port) != AMQP_STATUS_OK) {
        fprintf(stderr, "bench_broker: cannot reach %s:%d\n", ci.host, ci.port);
        exit(1);
    }
    rmq_check(amqp_login(c, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
              "login");
    amqp_channel_open(c, 1);
    rmq_check(amqp_get_rpc_reply(c), "channel.open");
    free(copy);
    return c;
}

static void *rmq_worker(void *arg)
{
    int index = (int)(long)arg;
    amqp_connection_state_t c = rmq_connect();
    amqp_confirm_select(c, 1);
    rmq_check(amqp_get_rpc_reply(c), "confirm.select");
    amqp_table_entry_t h[5];
    const char *hk[] = {"event_id", "event_type", "aggregate_type", "aggregate_id", "created_at"};
    message m;
    long n = share(index);
    uint64_t tag = 0;
    for (long sent = 0; sent < n;) {
        long w = next_window(sent, n);
        uint64_t first = tag + 1;
        for (long k = 0; k < w; k++, sent++) {
            make_message(&m, index, sent);
            const char *hv[] = {m.event_id, "order.created", "Order", m.aggregate_id, m.created_at};
            for (int i = 0; i < 5; i++) {
                h[i].key = amqp_cstring_bytes(hk[i]);
                h[i].value.kind = AMQP_FIELD_KIND_UTF8;
                h[i].value.value.bytes = amqp_cstring_bytes(hv[i]);
            }
            amqp_basic_properties_t p;
            memset(&p, 0, sizeof p);
            p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                       AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG |
                       AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_HEADERS_FLAG;
            p.content_type = amqp_cstring_bytes("application/json");
            p.delivery_mode = 2;
            p.message_id = amqp_cstring_bytes(m.event_id);
            p.type = amqp_cstring_bytes("order.created");
            p.timestamp = (uint64_t)time(NULL);
            p.headers.num_entries = 5;
            p.headers.entries = h;
            char key[64];
            snprintf(key, sizeof key, "Order.order.created");
            amqp_bytes_t body = {(size_t)m.payload_len, m.payload};
            if (amqp_basic_publish(c, 1, amqp_cstring_bytes(topic), amqp_cstring_bytes(key), 1, 0,
                                   &p, body) != AMQP_STATUS_OK) {
                fprintf(stderr, "bench_broker: rabbitmq publish failed\n");
                exit(1);
            }
            tag++;
        }
        /* confirms: basic.ack/nack with `multiple`; a basic.return precedes the ack */
        uint64_t acked = first - 1;
        while (acked < tag) {
            amqp_frame_t f;
            if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) {
                fprintf(stderr, "bench_broker: rabbitmq connection lost\n");
                exit(1);
            }
            if (f.frame_type != AMQP_FRAME_METHOD)
                continue;
            amqp_method_number_t id = f.payload.method.id;
            if (id == AMQP_BASIC_ACK_METHOD || id == AMQP_BASIC_NACK_METHOD) {
                uint64_t dt;
                int multiple;
                if (id == AMQP_BASIC_ACK_METHOD) {
                    amqp_basic_ack_t *a = f.payload.method.decoded;
                    dt = a->delivery_tag;
                    multiple = a->multiple;
                } else {
                    amqp_basic_nack_t *a = f.payload.method.decoded;
                    dt = a->delivery_tag;
                    multiple = a->multiple;
                    atomic_fetch_add(&failures, multiple ? (long)(dt - acked) : 1);
                }
                acked = multiple ? dt : (dt > acked ? dt : acked);
            } else if (id == AMQP_BASIC_RETURN_METHOD) {
                atomic_fetch_add(&failures, 1);
                amqp_message_t msg; /* the returned content follows: consume it */
                amqp_read_message(c, 1, &msg, 0);
                amqp_destroy_message(&msg);
            } else if (id == AMQP_CHANNEL_CLOSE_METHOD) {
                fprintf(stderr, "bench_broker: rabbitmq channel closed by the broker\n");
                exit(1);
            }
            amqp_maybe_release_buffers(c);
        }
        window_acknowledged(sent - w, w);
    }
    amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return NULL;
}

/* Declares the bench exchange and queue (as the driver's declare_* options do). */
static void rmq_setup(void)
{
    amqp_connection_state_t c = rmq_connect();
    amqp_exchange_declare(c, 1, amqp_cstring_bytes(topic), amqp_cstring_bytes("topic"), 0, 1, 0, 0,
                          amqp_empty_table);
    rmq_check(amqp_get_rpc_reply(c), "exchange.declare");
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
    rmq_check(amqp_get_rpc_reply(c), "queue.declare");
    amqp_queue_bind(c, 1, amqp_cstring_bytes(queue), amqp_cstring_bytes(topic),
                    amqp_cstring_bytes("#"), amqp_empty_table);
    rmq_check(amqp_get_rpc_reply(c), "queue.bind");
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

static int rmq_purge(void)
{
    amqp_connection_state_t c = rmq_connect();
    amqp_queue_purge_ok_t *ok = amqp_queue_purge(c, 1, amqp_cstring_bytes(queue));
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    /* a missing queue closes the channel: nothing to purge */
    if (r.reply_type == AMQP_RESPONSE_NORMAL && ok)
        printf("%u\n", ok->message_count);
    else
        printf("0\n");
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return 0;
}

/* ---------------------------------------------------------------- mqtt */

/* Each window goes out with at most mqtt_inflight publishes unacknowledged,
 * the next one sent from the acknowledgement callback, as the driver does:
 * paho's per-message cost grows with what it holds (its allocation tracker
 * and its lists), so handing it a whole window of 500 at once measured paho
 * at its worst, not the library's limit. */
static int mqtt_inflight = 64;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long outstanding; /* not yet acknowledged in this window */
    int connected;
    MQTTAsync client;
    int index;
    const char *dest;
    long next, end; /* messages [next, end) of the window are still to be sent */
    long unacked;   /* sent and not yet acknowledged */
} mqtt_state;

static void mqtt_ok(void *ctx, MQTTAsync_successData5 *d);
static void mqtt_fail(void *ctx, MQTTAsync_failureData5 *d);
static void mqtt_settle(mqtt_state *st, int ok);

/* Sends what the window still holds while fewer than mqtt_inflight are unacknowledged. */
static void mqtt_send_more(mqtt_state *st)
{
    for (;;) {
        pthread_mutex_lock(&st->lock);
        if (st->next >= st->end || st->unacked >= mqtt_inflight) {
            pthread_mutex_unlock(&st->lock);
            return;
        }
        long seq = st->next++;
        st->unacked++;
        pthread_mutex_unlock(&st->lock);

        message m;
        make_message(&m, st->index, seq);
        MQTTProperties props = MQTTProperties_initializer;
        const char *hk[] = {"event_id",     "event_type", "aggregate_type",
                            "aggregate_id", "created_at", "aggregate_seq"};
        const char *hv[] = {m.event_id,     "order.created", "Order",
                            m.aggregate_id, m.created_at,    m.aggregate_seq};
        char dest[160];
        if (per_aggregate)
            snprintf(dest, sizeof dest, "%s/Order/%s", topic, m.aggregate_id);
        for (int i = 0; i < (per_aggregate ? 6 : 5); i++) {
            MQTTProperty p = {.identifier = MQTTPROPERTY_CODE_USER_PROPERTY};
            p.value.data.data = (char *)hk[i];
            p.value.data.len = (int)strlen(hk[i]);
            p.value.value.data = (char *)hv[i];
            p.value.value.len = (int)strlen(hv[i]);
            MQTTProperties_add(&props, &p);
        }
        MQTTProperty ct = {.identifier = MQTTPROPERTY_CODE_CONTENT_TYPE};
        ct.value.data.data = "application/json";
        ct.value.data.len = 16;
        MQTTProperties_add(&props, &ct);
        MQTTAsync_message msg = MQTTAsync_message_initializer;
        msg.payload = m.payload;
        msg.payloadlen = m.payload_len;
        msg.qos = 1;
        msg.properties = props;
        MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
        ro.onSuccess5 = mqtt_ok;
        ro.onFailure5 = mqtt_fail;
        ro.context = st;
        int rc = MQTTAsync_sendMessage(st->client, per_aggregate ? dest : st->dest, &msg, &ro);
        MQTTProperties_free(&props);
        if (rc != MQTTASYNC_SUCCESS) { /* this one and the rest of the window fail */
            pthread_mutex_lock(&st->lock);
            long rest = st->end - st->next;
            st->next = st->end;
            st->unacked--;
            st->outstanding -= 1 + rest;
            atomic_fetch_add(&failures, 1 + rest);
            if (st->outstanding == 0)
                pthread_cond_signal(&st->cond);
            pthread_mutex_unlock(&st->lock);
            return;
        }
    }
}

static void mqtt_settle(mqtt_state *st, int ok)
{
    if (!ok)
        atomic_fetch_add(&failures, 1);
    pthread_mutex_lock(&st->lock);
    st->unacked--;
    if (--st->outstanding == 0)
        pthread_cond_signal(&st->cond);
    int more = st->next < st->end;
    pthread_mutex_unlock(&st->lock);
    if (more)
        mqtt_send_more(st);
}

static void mqtt_ok(void *ctx, MQTTAsync_successData5 *d)
{
    mqtt_settle(ctx, d->reasonCode < 0x80);
}

static void mqtt_fail(void *ctx, MQTTAsync_failureData5 *d)
{
    (void)d;
    mqtt_settle(ctx, 0);
}

static void mqtt_connected(void *ctx, MQTTAsync_successData5 *d)
{
    (void)d;
    mqtt_state *st = ctx;
    pthread_mutex_lock(&st->lock);
    st->connected = 1;
    pthread_cond_signal(&st->cond);
    pthread_mutex_unlock(&st->lock);
}

static void mqtt_connect_failed(void *ctx, MQTTAsync_failureData5 *d)
{
    (void)ctx;
    fprintf(stderr, "bench_broker: mqtt connect failed: %s\n", d && d->message ? d->message : "?");
    exit(1);
}

static int mqtt_arrived(void *ctx, char *t, int tl, MQTTAsync_message *m)
{
    (void)ctx;
    (void)tl;
    MQTTAsync_freeMessage(&m);
    MQTTAsync_free(t);
    return 1;
}

static void *mqtt_worker(void *arg)
{
    int index = (int)(long)arg;
    mqtt_state st = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    char id[64];
    snprintf(id, sizeof id, "obx-bench-%d-%d", (int)getpid(), index);
    MQTTAsync client;
    MQTTAsync_createOptions cro = MQTTAsync_createOptions_initializer5;
    cro.sendWhileDisconnected = 0;
    cro.maxBufferedMessages = mqtt_inflight + 16;
    if (MQTTAsync_createWithOptions(&client, url, id, MQTTCLIENT_PERSISTENCE_NONE, NULL, &cro) !=
        MQTTASYNC_SUCCESS) {
        fprintf(stderr, "bench_broker: mqtt create failed\n");
        exit(1);
    }
    MQTTAsync_setCallbacks(client, &st, NULL, mqtt_arrived, NULL);
    MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
    co.cleanstart = 1;
    co.maxInflight = mqtt_inflight;
    co.onSuccess5 = mqtt_connected;
    co.onFailure5 = mqtt_connect_failed;
    co.context = &st;
    if (MQTTAsync_connect(client, &co) != MQTTASYNC_SUCCESS) {
        fprintf(stderr, "bench_broker: mqtt connect failed\n");
        exit(1);
    }
    pthread_mutex_lock(&st.lock);
    while (!st.connected)
        pthread_cond_wait(&st.cond, &st.lock);
    pthread_mutex_unlock(&st.lock);

    long n = share(index);
    char dest[128];
    snprintf(dest, sizeof dest, "%s/Order/order.created", topic);
    st.client = client;
    st.index = index;
    st.dest = dest;
    for (long sent = 0; sent < n;) {
        long w = next_window(sent, n);
        pthread_mutex_lock(&st.lock);
        st.outstanding += w;
        st.next = sent;
        st.end = sent + w;
        pthread_mutex_unlock(&st.lock);
        mqtt_send_more(&st);
        pthread_mutex_lock(&st.lock);
        while (st.outstanding > 0)
            pthread_cond_wait(&st.cond, &st.lock);
        pthread_mutex_unlock(&st.lock);
        sent += w;
        window_acknowledged(sent - w, w);
    }
    MQTTAsync_disconnectOptions dopt = MQTTAsync_disconnectOptions_initializer5;
    MQTTAsync_disconnect(client, &dopt);
    usleep(100000);
    MQTTAsync_destroy(&client);
    return NULL;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_broker kafka|rabbitmq|mqtt|rabbitmq-purge -u URL [-t TOPIC] "
                        "[-q QUEUE] [-n N] [-w W] [-b B] [-i MQTT_IN_FLIGHT] [-a AGGREGATES] [-p] "
                        "[-r RATE -s SECONDS]\n");
        return 2;
    }
    const char *mode = argv[1];
    int opt;
    double seconds = 0;
    optind = 2;
    while ((opt = getopt(argc, argv, "u:t:q:n:w:b:i:a:pr:s:")) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 't': topic = optarg; break;
        case 'q': queue = optarg; break;
        case 'n': count = atol(optarg); break;
        case 'w': workers = atoi(optarg); break;
        case 'b': window_size = atoi(optarg); break;
        case 'i': mqtt_inflight = atoi(optarg); break;
        case 'a': aggregates = atoi(optarg); break;
        case 'p': per_aggregate = 1; break;
        case 'r': rate = atof(optarg); break;
        case 's': seconds = atof(optarg); break;
        default: return 2;
        }
    }
    if (!url || workers < 1 || window_size < 1 || mqtt_inflight < 1 || aggregates < 1) {
        fprintf(stderr, "bench_broker: -u is required; -w, -b, -i and -a must be positive\n");
        return 2;
    }
    if (strcmp(mode, "rabbitmq-purge") == 0)
        return rmq_purge();
    if (!topic) {
        fprintf(stderr, "bench_broker: -t is required\n");
        return 2;
    }
    void *(*fn)(void *);
    if (strcmp(mode, "kafka") == 0)
        fn = kafka_worker;
    else if (strcmp(mode, "rabbitmq") == 0) {
        rmq_setup();
        fn = rmq_worker;
    } else if (strcmp(mode, "mqtt") == 0)
        fn = mqtt_worker;
    else {
        fprintf(stderr, "bench_broker: unknown broker %s\n", mode);
        return 2;
    }
    if (rate > 0) { /* the latency of one client at a steady rate */
        workers = 1;
        count = (long)(rate * (seconds > 0 ? seconds : 10));
        latency_ms = calloc((size_t)count, sizeof *latency_ms);
    }
    pthread_t *t = calloc((size_t)workers, sizeof *t);
    double t0 = now_s();
    started = t0 + 1.0; /* the client connects first */
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, fn, (void *)(long)i);
    for (int i = 0; i < workers; i++)
        pthread_join(t[i], NULL);
    double secs = now_s() - t0;
    free(t);
    long failed = atomic_load(&failures);
    if (rate > 0)
        print_latency();
    else
        printf("%ld %.3f %.0f\n", count - failed, secs, secs > 0 ? (count - failed) / secs : 0.0);
    free(latency_ms);
    if (failed)
        fprintf(stderr, "bench_broker: %ld messages failed\n", failed);
    return failed ? 1 : 0;
}
