/*
 * msub: an MQTT 5 test subscriber (paho asynchronous client, QoS 1).
 *
 * Counts messages, duplicates (by the event_id user property), messages
 * missing a required user property, and per-aggregate order violations: the
 * payload is JSON carrying "n", a sequence that grows within an aggregate, so
 * a first-seen event whose n is not above its aggregate's highest n so far was
 * delivered out of order. Survives broker restarts (reconnects; with -P it
 * keeps a persistent session so nothing is missed while it is away).
 *
 *   msub -u URL -t FILTER -n EXPECTED [-i CLIENT_ID] [-P] [-r READY_FILE]
 *        [-H key=value] [-o EVENT_ID_FILE] [-l LINGER_MS] [-T TIMEOUT_S]
 *
 * Exits 0 when EXPECTED distinct events arrived with all properties, the
 * expected header and in order; prints one summary line on stdout.
 */
#include <MQTTAsync.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "delivery.h"

/* ---- options and counters */
static const char *url, *filter, *client_id = "msub", *ready_file, *out_file;
static const char *want_key, *want_val;
static long expected = -1, linger_ms = 1000, timeout_s = 600;
static int persistent;
static unsigned long received, missing_props, bad_header, no_seq;
static delivery *seen; /* duplicates and per-aggregate order */
static FILE *out;
static volatile sig_atomic_t stop;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* copy a user property value into buf; 1 if present */
static int user_prop(MQTTProperties *props, const char *key, char *buf, size_t size)
{
    for (int i = 0; i < props->count; i++) {
        MQTTProperty *p = &props->array[i];
        if (p->identifier != MQTTPROPERTY_CODE_USER_PROPERTY)
            continue;
        if ((size_t)p->value.data.len == strlen(key) &&
            memcmp(p->value.data.data, key, (size_t)p->value.data.len) == 0) {
            size_t n =
                (size_t)p->value.value.len < size - 1 ? (size_t)p->value.value.len : size - 1;
            memcpy(buf, p->value.value.data, n);
            buf[n] = 0;
            return 1;
        }
    }
    return 0;
}

static int payload_seq(const char *p, size_t len, long long *n)
{
    char tmp[4096];
    size_t l = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
    memcpy(tmp, p, l);
    tmp[l] = 0;
    char *s = strstr(tmp, "\"n\"");
    if (!s)
        return 0;
    s += 3;
    while (*s == ' ' || *s == ':')
        s++;
    char *end;
    *n = strtoll(s, &end, 10);
    return end != s;
}

static void on_message(MQTTAsync_message *m)
{
    static const char *required[] = {"event_id", "event_type", "aggregate_type", "aggregate_id",
                                     "created_at"};
    char eid[128], agg[256], val[512];
    received++;
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        if (!user_prop(&m->properties, required[i], val, sizeof val) || !val[0]) {
            missing_props++;
            return;
        }
    }
    user_prop(&m->properties, "event_id", eid, sizeof eid);
    user_prop(&m->properties, "aggregate_id", agg, sizeof agg);
    long long n;
    int has_n = payload_seq(m->payload, (size_t)m->payloadlen, &n);
    if (delivery_add(seen, eid, strlen(eid), agg, strlen(agg), has_n ? n : -1) ==
        DELIVERY_DUPLICATE)
        return;
    if (out)
        fprintf(out, "%s\n", eid);
    if (want_key &&
        (!user_prop(&m->properties, want_key, val, sizeof val) || strcmp(val, want_val) != 0))
        bad_header++;
    if (!has_n)
        no_seq++;
}

/* Connection state, shared with paho's callbacks. Messages are counted in
 * the messageArrived callback: paho's synchronous receive call drops
 * messages the library already acknowledged when the connection breaks, and
 * loses the queue a resumed session delivers right after CONNACK, either of
 * which would look like a message lost by the relay. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static MQTTAsync client;
static int connected, connecting, subscribed, failed_connect, sessions_lost;

static void on_sub_ok(void *ctx, MQTTAsync_successData5 *r)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    subscribed = r->reasonCode == 1 ? 1 : -1; /* granted QoS 1 */
    pthread_mutex_unlock(&mu);
}

static void on_sub_fail(void *ctx, MQTTAsync_failureData5 *r)
{
    (void)ctx;
    (void)r;
    pthread_mutex_lock(&mu);
    subscribed = -1;
    pthread_mutex_unlock(&mu);
}

static void subscribe_now(void)
{
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    MQTTSubscribe_options so = MQTTSubscribe_options_initializer;
    ro.onSuccess5 = on_sub_ok;
    ro.onFailure5 = on_sub_fail;
    ro.subscribeOptions = so;
    if (MQTTAsync_subscribe(client, filter, 1, &ro) != MQTTASYNC_SUCCESS) {
        pthread_mutex_lock(&mu);
        subscribed = -1;
        pthread_mutex_unlock(&mu);
    }
}

static void on_conn_ok(void *ctx, MQTTAsync_successData5 *r)
{
    int first = ctx != NULL;
    int present = r->alt.connect.sessionPresent;
    pthread_mutex_lock(&mu);
    connected = 1;
    connecting = 0;
    int resub = first || !persistent || !present;
    if (!first && persistent && !present)
        sessions_lost++; /* the broker forgot us: messages meanwhile are gone */
    pthread_mutex_unlock(&mu);
    if (resub)
        subscribe_now();
}

static void on_conn_fail(void *ctx, MQTTAsync_failureData5 *r)
{
    (void)ctx;
    (void)r;
    pthread_mutex_lock(&mu);
    connecting = 0;
    failed_connect++;
    pthread_mutex_unlock(&mu);
}

static void on_lost(void *ctx, char *cause)
{
    (void)ctx;
    (void)cause; /* the main loop reconnects */
    pthread_mutex_lock(&mu);
    connected = 0;
    pthread_mutex_unlock(&mu);
}

static int on_arrived(void *ctx, char *topic, int len, MQTTAsync_message *m)
{
    (void)ctx;
    (void)len;
    pthread_mutex_lock(&mu);
    on_message(m);
    pthread_mutex_unlock(&mu);
    MQTTAsync_freeMessage(&m);
    MQTTAsync_free(topic);
    return 1;
}

static MQTTProperties conn_props = MQTTProperties_initializer;

static int start_connect(int first)
{
    MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
    co.keepAliveInterval = 20;
    /* persistent: clean start 0 even the first time; Mosquitto 2.0 does not
     * save a session begun with clean start 1 across its own restart, even
     * with a session expiry (use a fresh client id for a fresh session) */
    co.cleanstart = persistent ? 0 : 1;
    co.connectProperties = persistent ? &conn_props : NULL;
    co.onSuccess5 = on_conn_ok;
    co.onFailure5 = on_conn_fail;
    co.context = first ? (void *)1 : NULL;
    pthread_mutex_lock(&mu);
    connecting = 1;
    pthread_mutex_unlock(&mu);
    int rc = MQTTAsync_connect(client, &co);
    if (rc != MQTTASYNC_SUCCESS) {
        pthread_mutex_lock(&mu);
        connecting = 0;
        pthread_mutex_unlock(&mu);
    }
    return rc;
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "u:t:n:i:Pr:H:o:l:T:")) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 't': filter = optarg; break;
        case 'n': expected = atol(optarg); break;
        case 'i': client_id = optarg; break;
        case 'P': persistent = 1; break;
        case 'r': ready_file = optarg; break;
        case 'H': {
            char *eq = strchr(optarg, '=');
            if (!eq) {
                fprintf(stderr, "msub: -H wants key=value\n");
                return 2;
            }
            *eq = 0;
            want_key = optarg;
            want_val = eq + 1;
            break;
        }
        case 'o': out_file = optarg; break;
        case 'l': linger_ms = atol(optarg); break;
        case 'T': timeout_s = atol(optarg); break;
        default:
            fprintf(stderr, "usage: msub -u URL -t FILTER -n EXPECTED [-i ID] [-P] [-r READY] "
                            "[-H k=v] [-o FILE] [-l LINGER_MS] [-T TIMEOUT_S]\n");
            return 2;
        }
    }
    if (!url || !filter || expected < 0) {
        fprintf(stderr, "msub: -u, -t and -n are required\n");
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    if (out_file && !(out = fopen(out_file, "w"))) {
        perror(out_file);
        return 2;
    }
    seen = delivery_new("msub");
    MQTTProperty sp = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
    sp.value.integer4 = 3600;
    MQTTProperties_add(&conn_props, &sp);

    MQTTAsync_createOptions cro = MQTTAsync_createOptions_initializer5;
    if (MQTTAsync_createWithOptions(&client, url, client_id, MQTTCLIENT_PERSISTENCE_NONE, NULL,
                                    &cro) != MQTTASYNC_SUCCESS ||
        MQTTAsync_setCallbacks(client, NULL, on_lost, on_arrived, NULL) != MQTTASYNC_SUCCESS) {
        fprintf(stderr, "msub: cannot create client\n");
        return 2;
    }
    /* first connect and subscribe, within 10 s */
    int64_t t_end = now_ms() + 10000;
    if (start_connect(1) != MQTTASYNC_SUCCESS) {
        fprintf(stderr, "msub: cannot start connecting to %s\n", url);
        return 2;
    }
    for (;;) {
        pthread_mutex_lock(&mu);
        int s = subscribed, f = failed_connect;
        pthread_mutex_unlock(&mu);
        if (s == 1)
            break;
        if (s < 0 || f || now_ms() > t_end) {
            fprintf(stderr, "msub: cannot connect/subscribe to %s (%s)\n", url,
                    s < 0 ? "subscribe refused"
                    : f   ? "connect failed"
                          : "timeout");
            return 2;
        }
        usleep(10 * 1000);
    }
    if (ready_file) {
        FILE *f = fopen(ready_file, "w");
        if (f)
            fclose(f);
    }

    int64_t deadline = now_ms() + timeout_s * 1000, done_at = 0, retry_at = 0;
    unsigned long reconnects = 0;
    while (!stop) {
        int64_t now = now_ms();
        if (now >= deadline)
            break;
        pthread_mutex_lock(&mu);
        long got = (long)delivery_unique(seen);
        int up = connected, busy = connecting;
        pthread_mutex_unlock(&mu);
        if (got >= expected) {
            if (!done_at)
                done_at = now;
            if (now - done_at >= linger_ms)
                break;
        }
        if (!up && !busy && now >= retry_at) {
            if (start_connect(0) == MQTTASYNC_SUCCESS)
                reconnects++;
            retry_at = now + 200;
        }
        usleep(20 * 1000);
    }
    pthread_mutex_lock(&mu);
    int up = connected;
    pthread_mutex_unlock(&mu);
    if (up) {
        /* a persistent session must not linger on the broker after the test */
        MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
        MQTTProperties dp = MQTTProperties_initializer;
        MQTTProperty p = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
        p.value.integer4 = 0;
        MQTTProperties_add(&dp, &p);
        d.properties = dp;
        d.timeout = 1000;
        MQTTAsync_disconnect(client, &d);
        usleep(300 * 1000);
        MQTTProperties_free(&dp);
    }
    MQTTAsync_destroy(&client);
    MQTTProperties_free(&conn_props);
    pthread_mutex_lock(&mu);
    if (out)
        fclose(out);
    printf("msub: received=%lu unique=%zu duplicates=%zu missing_props=%lu bad_header=%lu "
           "order_violations=%zu no_seq=%lu aggregates=%zu reconnects=%lu sessions_lost=%d "
           "expected=%ld\n",
           received, delivery_unique(seen), delivery_duplicates(seen), missing_props, bad_header,
           delivery_order_breaks(seen), no_seq, delivery_aggregates(seen), reconnects,
           sessions_lost, expected);
    int ok = (long)delivery_unique(seen) == expected && !missing_props && !bad_header &&
             !delivery_order_breaks(seen) && !sessions_lost;
    delivery_free(seen);
    pthread_mutex_unlock(&mu);
    fflush(stdout);
    return ok ? 0 : 1;
}
