/*
 * msub: an MQTT 5 test subscriber (paho synchronous client, QoS 1).
 *
 * Counts messages, duplicates (by the event_id user property), messages
 * missing a required user property, and per-aggregate order violations: the
 * payload is JSON carrying "n", a sequence that grows within an aggregate, so
 * a first-seen event whose n is below the aggregate's highest n so far was
 * delivered out of order. Survives broker restarts (reconnects; with -P it
 * keeps a persistent session so nothing is missed while it is away).
 *
 *   msub -u URL -t FILTER -n EXPECTED [-i CLIENT_ID] [-P] [-r READY_FILE]
 *        [-H key=value] [-o EVENT_ID_FILE] [-l LINGER_MS] [-T TIMEOUT_S]
 *
 * Exits 0 when EXPECTED distinct events arrived with all properties, the
 * expected header and in order; prints one summary line on stdout.
 */
#include <MQTTClient.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a string -> int64 hash map (open addressing), enough for a test */
typedef struct {
    char **keys;
    int64_t *vals;
    size_t cap, len;
} smap;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int64_t *smap_slot(smap *m, const char *key, int *created);

static void smap_grow(smap *m)
{
    smap old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    m->len = 0;
    if (!m->keys || !m->vals) {
        fprintf(stderr, "msub: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (old.keys[i]) {
            int c;
            *smap_slot(m, old.keys[i], &c) = old.vals[i];
            free(old.keys[i]);
        }
    }
    free(old.keys);
    free(old.vals);
}

static int64_t *smap_slot(smap *m, const char *key, int *created)
{
    if ((m->len + 1) * 2 > m->cap)
        smap_grow(m);
    size_t i = hash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            *created = 0;
            return &m->vals[i];
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = strdup(key);
    m->vals[i] = 0;
    m->len++;
    *created = 1;
    return &m->vals[i];
}

/* ---- options and counters */
static const char *url, *filter, *client_id = "msub", *ready_file, *out_file;
static const char *want_key, *want_val;
static long expected = -1, linger_ms = 1000, timeout_s = 600;
static int persistent;
static unsigned long received, unique_n, duplicates, missing_props, bad_header, order_violations,
    no_seq;
static smap seen, last_n;
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
            size_t n = (size_t)p->value.value.len < size - 1 ? (size_t)p->value.value.len : size - 1;
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

static void on_message(MQTTClient_message *m)
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
    int created;
    smap_slot(&seen, eid, &created);
    if (!created) {
        duplicates++;
        return;
    }
    unique_n++;
    if (out)
        fprintf(out, "%s\n", eid);
    if (want_key && (!user_prop(&m->properties, want_key, val, sizeof val) ||
                     strcmp(val, want_val) != 0))
        bad_header++;
    long long n;
    if (!payload_seq(m->payload, (size_t)m->payloadlen, &n)) {
        no_seq++;
        return;
    }
    int64_t *last = smap_slot(&last_n, agg, &created);
    if (!created && n < *last) {
        if (order_violations++ < 5)
            fprintf(stderr, "msub: order violation in aggregate %s: n=%lld after n=%lld\n", agg,
                    n, (long long)*last);
    } else {
        *last = n;
    }
}

static int connect_and_subscribe(MQTTClient c, int first)
{
    MQTTClient_connectOptions co = MQTTClient_connectOptions_initializer5;
    MQTTProperties cprops = MQTTProperties_initializer;
    co.keepAliveInterval = 20;
    co.cleanstart = 1;
    if (persistent) {
        MQTTProperty p = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
        p.value.integer4 = 3600;
        MQTTProperties_add(&cprops, &p);
        co.cleanstart = first; /* a fresh session at start, resumed afterwards */
    }
    MQTTResponse r = MQTTClient_connect5(c, &co, &cprops, NULL);
    MQTTProperties_free(&cprops);
    int rc = r.reasonCode;
    MQTTResponse_free(r);
    if (rc != MQTTCLIENT_SUCCESS)
        return rc;
    /* subscribing again is harmless and covers a broker that lost the session */
    MQTTSubscribe_options so = MQTTSubscribe_options_initializer;
    MQTTResponse s = MQTTClient_subscribe5(c, filter, 1, &so, NULL);
    rc = s.reasonCode;
    MQTTResponse_free(s);
    if (rc != 1) { /* granted QoS 1 */
        fprintf(stderr, "msub: subscribe to %s failed: %d\n", filter, rc);
        return rc ? rc : -1;
    }
    return 0;
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

    MQTTClient c;
    MQTTClient_createOptions cro = MQTTClient_createOptions_initializer;
    cro.MQTTVersion = MQTTVERSION_5;
    if (MQTTClient_createWithOptions(&c, url, client_id, MQTTCLIENT_PERSISTENCE_NONE, NULL, &cro) !=
        MQTTCLIENT_SUCCESS) {
        fprintf(stderr, "msub: cannot create client\n");
        return 2;
    }
    int rc = connect_and_subscribe(c, 1);
    if (rc) {
        fprintf(stderr, "msub: cannot connect/subscribe to %s: %d\n", url, rc);
        return 2;
    }
    if (ready_file) {
        FILE *f = fopen(ready_file, "w");
        if (f)
            fclose(f);
    }

    int64_t deadline = now_ms() + timeout_s * 1000, done_at = 0;
    unsigned long reconnects = 0;
    while (!stop) {
        int64_t now = now_ms();
        if (now >= deadline)
            break;
        if ((long)unique_n >= expected) {
            if (!done_at)
                done_at = now;
            if (now - done_at >= linger_ms)
                break;
        }
        if (!MQTTClient_isConnected(c)) {
            if (connect_and_subscribe(c, 0) == 0)
                reconnects++;
            else
                usleep(200 * 1000);
            continue;
        }
        char *topic = NULL;
        int tlen = 0;
        MQTTClient_message *m = NULL;
        rc = MQTTClient_receive(c, &topic, &tlen, &m, 200);
        if (m) {
            on_message(m);
            MQTTClient_freeMessage(&m);
            MQTTClient_free(topic);
        } else if (rc != MQTTCLIENT_SUCCESS && rc != MQTTCLIENT_TOPICNAME_TRUNCATED) {
            usleep(100 * 1000); /* disconnected: the loop reconnects */
        }
    }
    if (MQTTClient_isConnected(c)) {
        /* a persistent session must not linger on the broker after the test */
        MQTTProperties dp = MQTTProperties_initializer;
        MQTTProperty p = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
        p.value.integer4 = 0;
        MQTTProperties_add(&dp, &p);
        MQTTClient_disconnect5(c, 1000, MQTTREASONCODE_SUCCESS, &dp);
        MQTTProperties_free(&dp);
    }
    MQTTClient_destroy(&c);
    if (out)
        fclose(out);
    printf("msub: received=%lu unique=%lu duplicates=%lu missing_props=%lu bad_header=%lu "
           "order_violations=%lu no_seq=%lu aggregates=%zu reconnects=%lu expected=%ld\n",
           received, unique_n, duplicates, missing_props, bad_header, order_violations, no_seq,
           last_n.len, reconnects, expected);
    int ok = (long)unique_n == expected && !missing_props && !bad_header && !order_violations;
    return ok ? 0 : 1;
}
