/*
 * chaos_mqtt: records every message of a topic filter as history lines
 * (history.h) until SIGTERM: MQTT 5, QoS 1, a persistent session (clean start
 * 0, session expiry one hour) so what arrives while it is away (a broker
 * restart) is queued for it. The line is written in the arrival callback,
 * before paho sends the PUBACK. A resumed connection without the session
 * ("sessions_lost") means the broker forgot queued messages: it is printed.
 *
 *   chaos_mqtt -u URL -t FILTER -i CLIENT_ID -o HISTORY_FILE [-r READY_FILE]
 */
#include <MQTTAsync.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "history.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static MQTTAsync client;
static const char *filter;
static FILE *out;
static int connected, connecting, subscribed;
static long long got, sessions_lost, reconnects;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void user_prop(MQTTProperties *props, const char *key, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < props->count; i++) {
        MQTTProperty *p = &props->array[i];
        if (p->identifier == MQTTPROPERTY_CODE_USER_PROPERTY &&
            (size_t)p->value.data.len == strlen(key) &&
            !memcmp(p->value.data.data, key, (size_t)p->value.data.len)) {
            size_t n =
                (size_t)p->value.value.len < size - 1 ? (size_t)p->value.value.len : size - 1;
            memcpy(buf, p->value.value.data, n);
            buf[n] = '\0';
        }
    }
}

static int on_arrived(void *ctx, char *topic, int len, MQTTAsync_message *m)
{
    (void)ctx;
    (void)len;
    char eid[128], agg[128];
    user_prop(&m->properties, "event_id", eid, sizeof eid);
    user_prop(&m->properties, "aggregate_id", agg, sizeof agg);
    pthread_mutex_lock(&mu);
    history_write(out, eid, agg, history_seq(m->payload, (size_t)m->payloadlen), m->dup != 0);
    got++;
    pthread_mutex_unlock(&mu);
    MQTTAsync_freeMessage(&m);
    MQTTAsync_free(topic);
    return 1; /* paho acknowledges after this returns */
}

static void on_sub_ok(void *ctx, MQTTAsync_successData5 *r)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    subscribed = r->reasonCode == 1 ? 1 : -1;
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
    ro.onSuccess5 = on_sub_ok;
    ro.onFailure5 = on_sub_fail;
    MQTTAsync_subscribe(client, filter, 1, &ro);
}

static void on_conn_ok(void *ctx, MQTTAsync_successData5 *r)
{
    int first = ctx != NULL, present = r->alt.connect.sessionPresent;
    pthread_mutex_lock(&mu);
    connected = 1;
    connecting = 0;
    if (!first && !present)
        sessions_lost++;
    pthread_mutex_unlock(&mu);
    if (first || !present)
        subscribe_now();
}

static void on_conn_fail(void *ctx, MQTTAsync_failureData5 *r)
{
    (void)ctx;
    (void)r;
    pthread_mutex_lock(&mu);
    connecting = 0;
    pthread_mutex_unlock(&mu);
}

static void on_lost(void *ctx, char *cause)
{
    (void)ctx;
    (void)cause;
    pthread_mutex_lock(&mu);
    connected = 0;
    pthread_mutex_unlock(&mu);
}

static MQTTProperties conn_props = MQTTProperties_initializer;

static void start_connect(int first)
{
    MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
    co.keepAliveInterval = 20;
    co.cleanstart = 0;
    co.connectProperties = &conn_props;
    co.onSuccess5 = on_conn_ok;
    co.onFailure5 = on_conn_fail;
    co.context = first ? (void *)1 : NULL;
    pthread_mutex_lock(&mu);
    connecting = 1;
    pthread_mutex_unlock(&mu);
    if (MQTTAsync_connect(client, &co) != MQTTASYNC_SUCCESS) {
        pthread_mutex_lock(&mu);
        connecting = 0;
        pthread_mutex_unlock(&mu);
    }
}

int main(int argc, char **argv)
{
    const char *url = NULL, *id = NULL, *path = NULL, *ready = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "u:t:i:o:r:")) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 't': filter = optarg; break;
        case 'i': id = optarg; break;
        case 'o': path = optarg; break;
        case 'r': ready = optarg; break;
        default: return 2;
        }
    }
    if (!url || !filter || !id || !path) {
        fprintf(stderr, "usage: chaos_mqtt -u URL -t FILTER -i CLIENT_ID -o FILE [-r READY]\n");
        return 2;
    }
    if (!(out = fopen(path, "a"))) {
        perror(path);
        return 2;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    MQTTProperty sp = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
    sp.value.integer4 = 3600;
    MQTTProperties_add(&conn_props, &sp);
    MQTTAsync_createOptions cro = MQTTAsync_createOptions_initializer5;
    if (MQTTAsync_createWithOptions(&client, url, id, MQTTCLIENT_PERSISTENCE_NONE, NULL, &cro) !=
            MQTTASYNC_SUCCESS ||
        MQTTAsync_setCallbacks(client, NULL, on_lost, on_arrived, NULL) != MQTTASYNC_SUCCESS) {
        fprintf(stderr, "chaos_mqtt: cannot create client\n");
        return 2;
    }
    start_connect(1);
    for (int i = 0; i < 1000; i++) { /* 10 s to subscribe */
        pthread_mutex_lock(&mu);
        int s = subscribed;
        pthread_mutex_unlock(&mu);
        if (s)
            break;
        usleep(10 * 1000);
    }
    if (subscribed != 1) {
        fprintf(stderr, "chaos_mqtt: cannot subscribe to %s at %s\n", filter, url);
        return 2;
    }
    if (ready) {
        FILE *f = fopen(ready, "w");
        if (f)
            fclose(f);
    }
    while (!stop) {
        pthread_mutex_lock(&mu);
        int idle = !connected && !connecting;
        pthread_mutex_unlock(&mu);
        if (idle) {
            start_connect(0);
            reconnects++;
        }
        usleep(200 * 1000);
    }
    pthread_mutex_lock(&mu);
    int up = connected;
    pthread_mutex_unlock(&mu);
    if (up) { /* end the session: it must not linger on the broker */
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
    fclose(out);
    fprintf(stderr, "chaos_mqtt: %lld messages, %lld reconnects, sessions_lost=%lld\n", got,
            reconnects, sessions_lost);
    pthread_mutex_unlock(&mu);
    return sessions_lost ? 1 : 0;
}
