/*
 * MQTT 5 driver: instance life cycle, connection management, timeouts.
 * Publishing and acknowledgements are in mqtt_publish.c.
 *
 * Offline buffering is off on purpose: the outbox row is the buffer. While
 * disconnected, publishes are refused RETRIABLE and the host retries the row
 * later; a lost connection completes everything in flight RETRIABLE.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_int.h"

#define MQTT_DEFAULT_WINDOW 100
#define MQTT_DEFAULT_TIMEOUT_MS 30000
#define MQTT_FIRST_CONNECT_WAIT_MS 2000
#define MQTT_TIMER_TICK_MS 50

/* Only used to make client ids unique within a process. */
static atomic_uint mqtt_instance_seq;

static const obx_option mqtt_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED, "broker URL: tcp://host:port or ssl://host:port"},
    {"client_id_prefix", OBX_OPT_STRING, 0,
     "client id prefix; pid, instance number and a random suffix are appended"},
    {"username", OBX_OPT_STRING, 0, "user name"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (use ${ENV_VAR})"},
    {"qos", OBX_OPT_INT, 0, "1 (default) or 2; 0 is refused: it cannot be acknowledged"},
    {"window", OBX_OPT_INT, 0, "max publishes in flight per instance (default 100)"},
    {"window_wait_ms", OBX_OPT_INT, 0,
     "with the window full, publish waits up to this long per batch, then refuses RETRIABLE "
     "(default 2000; 0 refuses at once)"},
    {"publish_timeout_ms", OBX_OPT_INT, 0,
     "a publish not acknowledged in this time completes RETRIABLE (default 30000)"},
    {"content_type", OBX_OPT_STRING, 0, "content type property (default: the row's)"},
    {"message_expiry_s", OBX_OPT_INT, 0, "message expiry interval property (default none)"},
    {"keepalive_s", OBX_OPT_INT, 0, "keep-alive interval (default 30)"},
    {"connect_timeout_s", OBX_OPT_INT, 0, "TCP/TLS+CONNECT timeout (default 10)"},
    {"reconnect_min_ms", OBX_OPT_INT, 0, "first reconnect delay (default 100), doubled per failure"},
    {"reconnect_max_ms", OBX_OPT_INT, 0, "longest reconnect delay (default 5000)"},
    {"tls_ca", OBX_OPT_STRING, 0, "CA certificate file (PEM) for ssl:// URLs"},
    {"tls_cert", OBX_OPT_STRING, 0, "client certificate file (PEM)"},
    {"tls_key", OBX_OPT_STRING, 0, "client private key file (PEM)"},
    {"tls_key_password", OBX_OPT_STRING, OBX_OPT_SECRET, "private key pass phrase"},
    {"tls_verify", OBX_OPT_BOOL, 0, "verify the server certificate and host name (default true)"},
    {NULL, 0, 0, NULL},
};

int64_t mqtt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void mqtt_abstime(int64_t ms_from_now, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms_from_now / 1000;
    ts->tv_nsec += (ms_from_now % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

void mqtt_complete_locked(mqtt_inst *inst, mqtt_slot *slot, obx_status status, int code,
                          const char *detail)
{
    inst->host->complete(inst->host->host_ctx, slot->token, status, code, detail);
    slot->state = MQTT_SLOT_FREE;
    slot->early[0].used = slot->early[1].used = 0;
    inst->free_idx[inst->free_n++] = (int)(slot - inst->slots);
    inst->inflight--;
    pthread_cond_broadcast(&inst->cond);
}

/* Complete every INFLIGHT slot (mu held). SENDING slots belong to a
 * publish_batch in progress, which finishes them itself. */
static int mqtt_fail_all_locked(mqtt_inst *inst, const char *detail)
{
    int n = 0;
    for (int i = 0; i < inst->window; i++) {
        if (inst->slots[i].state == MQTT_SLOT_INFLIGHT) {
            mqtt_complete_locked(inst, &inst->slots[i], OBX_RETRIABLE, 0, detail);
            n++;
        }
    }
    return n;
}

/* ------------------------------------------------------------ connection */

static void mqtt_on_connect_ok(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_inst *inst = ctx;
    (void)resp;
    pthread_mutex_lock(&inst->mu);
    if (!inst->closed) {
        inst->connected = 1;
        inst->connecting = 0;
        inst->backoff_ms = inst->reconnect_min_ms;
        if (inst->connect_attempts > 1 || inst->ever_connected)
            inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                            "connected to %s as %s after %d attempt(s)", inst->url,
                            inst->client_id, inst->connect_attempts);
        else
            inst->host->log(inst->host->host_ctx, OBX_LOG_INFO, "connected to %s as %s",
                            inst->url, inst->client_id);
        inst->connect_attempts = 0;
        inst->ever_connected = 1;
        pthread_cond_broadcast(&inst->cond);
    }
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_on_connect_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    mqtt_inst *inst = ctx;
    pthread_mutex_lock(&inst->mu);
    if (!inst->closed) {
        inst->connecting = 0;
        inst->last_connect_code = resp->reasonCode ? (int)resp->reasonCode : resp->code;
        if (resp->reasonCode)
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err,
                     "CONNACK 0x%02x %s", (unsigned)resp->reasonCode,
                     MQTTReasonCode_toString(resp->reasonCode));
        else
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err, "%s%s%s",
                     MQTTAsync_strerror(resp->code), resp->message ? ": " : "",
                     resp->message ? resp->message : "");
        /* first failure and then every 10th: a broker outage should not flood the log */
        if (inst->connect_attempts % 10 == 1)
            inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                            "connect to %s failed (attempt %d): %s; retrying in %lld ms",
                            inst->url, inst->connect_attempts, inst->last_connect_err,
                            (long long)inst->backoff_ms);
        inst->next_connect_ms = mqtt_now_ms() + inst->backoff_ms;
        inst->backoff_ms *= 2;
        if (inst->backoff_ms > inst->reconnect_max_ms)
            inst->backoff_ms = inst->reconnect_max_ms;
        pthread_cond_broadcast(&inst->cond);
    }
    pthread_mutex_unlock(&inst->mu);
}

/* The connection is gone: complete everything in flight RETRIABLE. Paho may
 * still call onFailure5 for those later; their slots are FREE by then (or
 * carry another paho token), so the late callback is ignored. */
static void mqtt_lost_locked(mqtt_inst *inst, const char *why)
{
    if (inst->closed)
        return;
    int was = inst->connected;
    inst->connected = 0;
    int n = mqtt_fail_all_locked(inst, why);
    inst->n_lost += (uint64_t)n;
    if (was || n)
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "%s (%s); %d in-flight publish(es) completed RETRIABLE, reconnecting", why,
                        inst->url, n);
    if (!inst->connecting && inst->next_connect_ms < mqtt_now_ms() + inst->backoff_ms)
        inst->next_connect_ms = mqtt_now_ms() + inst->backoff_ms;
    pthread_cond_broadcast(&inst->cond);
}

static void mqtt_on_connection_lost(void *ctx, char *cause)
{
    mqtt_inst *inst = ctx;
    (void)cause; /* paho passes NULL or a static text; our own is clearer */
    pthread_mutex_lock(&inst->mu);
    mqtt_lost_locked(inst, "connection lost");
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_on_disconnected(void *ctx, MQTTProperties *props, enum MQTTReasonCodes reason)
{
    mqtt_inst *inst = ctx;
    char why[MQTT_DETAIL_MAX];
    (void)props;
    snprintf(why, sizeof why, "server sent DISCONNECT 0x%02x %s", (unsigned)reason,
             MQTTReasonCode_toString(reason));
    pthread_mutex_lock(&inst->mu);
    mqtt_lost_locked(inst, why);
    pthread_mutex_unlock(&inst->mu);
}

/* Start a connect (mu NOT held: paho takes its own mutex). */
static void mqtt_start_connect(mqtt_inst *inst)
{
    int rc = MQTTAsync_connect(inst->client, &inst->conn_opts);
    if (rc != MQTTASYNC_SUCCESS) {
        MQTTAsync_failureData5 fd = MQTTAsync_failureData5_initializer;
        fd.code = rc;
        mqtt_on_connect_fail(inst, &fd);
    }
}

/* Timer thread: publish timeouts and (re)connects with backoff. */
static void *mqtt_timer_main(void *arg)
{
    mqtt_inst *inst = arg;
    char detail[MQTT_DETAIL_MAX];
    pthread_mutex_lock(&inst->mu);
    while (!inst->stopping) {
        int64_t now = mqtt_now_ms();
        for (int i = 0; i < inst->window; i++) {
            mqtt_slot *s = &inst->slots[i];
            if (s->state == MQTT_SLOT_INFLIGHT && s->deadline_ms <= now) {
                snprintf(detail, sizeof detail, "no acknowledgement within %lld ms",
                         (long long)inst->publish_timeout_ms);
                inst->n_timeout++;
                inst->abandoned++;
                mqtt_complete_locked(inst, s, OBX_RETRIABLE, 0, detail);
            }
        }
        if (!inst->connected && !inst->connecting && now >= inst->next_connect_ms) {
            inst->connecting = 1;
            inst->connect_attempts++;
            pthread_mutex_unlock(&inst->mu);
            mqtt_start_connect(inst);
            pthread_mutex_lock(&inst->mu);
            continue;
        }
        struct timespec ts;
        mqtt_abstime(MQTT_TIMER_TICK_MS, &ts);
        pthread_cond_timedwait(&inst->cond, &inst->mu, &ts);
    }
    pthread_mutex_unlock(&inst->mu);
    return NULL;
}

/* ------------------------------------------------------------ create */

static int mqtt_getint(const obx_host *host, const char *name, int64_t def, int64_t min,
                       int64_t max, int64_t *out, char *errstr, size_t errstr_size)
{
    int64_t v = def;
    host->get_int(host->host_ctx, name, &v);
    if (v < min || v > max) {
        snprintf(errstr, errstr_size, "option %s = %lld: must be between %lld and %lld", name,
                 (long long)v, (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

static int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *prefix = "outbox-relay-", *s;
    int64_t v;

    if (!host->get_string(host->host_ctx, "url", &url) || !*url) {
        snprintf(errstr, errstr_size, "option url is required (tcp://host:port or ssl://host:port)");
        return -1;
    }
    int tls = strncmp(url, "ssl://", 6) == 0 || strncmp(url, "mqtts://", 8) == 0;
    if (!tls && strncmp(url, "tcp://", 6) != 0 && strncmp(url, "mqtt://", 7) != 0) {
        snprintf(errstr, errstr_size, "option url \"%.200s\": must start with tcp:// or ssl://",
                 url);
        return -1;
    }
    if (strlen(url) >= sizeof inst->url) {
        snprintf(errstr, errstr_size, "option url is too long");
        return -1;
    }
    strcpy(inst->url, url);

    if (host->get_int(host->host_ctx, "qos", &v) && v == 0) {
        snprintf(errstr, errstr_size,
                 "option qos = 0 is refused: QoS 0 has no acknowledgement, so the relay could "
                 "never know a message was delivered (use 1 or 2)");
        return -1;
    }
    if (mqtt_getint(host, "qos", 1, 1, 2, &v, errstr, errstr_size))
        return -1;
    inst->qos = (int)v;
    if (mqtt_getint(host, "window", MQTT_DEFAULT_WINDOW, 1, 65535, &v, errstr, errstr_size))
        return -1;
    inst->window = (int)v;
    if (mqtt_getint(host, "window_wait_ms", 2000, 0, 60000, &inst->window_wait_ms, errstr,
                    errstr_size))
        return -1;
    if (mqtt_getint(host, "publish_timeout_ms", MQTT_DEFAULT_TIMEOUT_MS, 100, 3600000,
                    &inst->publish_timeout_ms, errstr, errstr_size))
        return -1;
    if (mqtt_getint(host, "message_expiry_s", 0, 0, UINT32_MAX, &inst->message_expiry_s, errstr,
                    errstr_size))
        return -1;
    if (host->get_string(host->host_ctx, "content_type", &s) && *s)
        inst->content_type = s;
    if (mqtt_getint(host, "reconnect_min_ms", 100, 10, 600000, &inst->reconnect_min_ms, errstr,
                    errstr_size) ||
        mqtt_getint(host, "reconnect_max_ms", 5000, inst->reconnect_min_ms, 3600000,
                    &inst->reconnect_max_ms, errstr, errstr_size))
        return -1;

    MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
    if (mqtt_getint(host, "keepalive_s", 30, 0, 65535, &v, errstr, errstr_size))
        return -1;
    co.keepAliveInterval = (int)v;
    if (mqtt_getint(host, "connect_timeout_s", 10, 1, 600, &v, errstr, errstr_size))
        return -1;
    co.connectTimeout = (int)v;
    co.cleanstart = 1; /* no session state: the outbox is the buffer */
    co.maxInflight = inst->window;
    co.automaticReconnect = 0; /* our timer thread reconnects, also after a failed first try */
    co.onSuccess5 = mqtt_on_connect_ok;
    co.onFailure5 = mqtt_on_connect_fail;
    co.context = inst;
    if (host->get_string(host->host_ctx, "username", &s))
        co.username = s;
    if (host->get_string(host->host_ctx, "password", &s))
        co.password = s;
    if (co.password && !co.username) {
        snprintf(errstr, errstr_size, "option password needs option username");
        return -1;
    }

    MQTTAsync_SSLOptions so = MQTTAsync_SSLOptions_initializer;
    int any_tls = 0, verify = 1;
    if (host->get_string(host->host_ctx, "tls_ca", &s))
        so.trustStore = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_cert", &s))
        so.keyStore = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_key", &s))
        so.privateKey = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_key_password", &s))
        so.privateKeyPassword = s, any_tls = 1;
    if (host->get_bool(host->host_ctx, "tls_verify", &verify))
        any_tls = 1;
    if (any_tls && !tls) {
        snprintf(errstr, errstr_size, "tls_* options need an ssl:// url");
        return -1;
    }
    if (so.keyStore && !so.privateKey)
        so.privateKey = so.keyStore; /* paho: key may live in the certificate file */
    so.enableServerCertAuth = verify;
    so.verify = verify;
    inst->ssl_opts = so;
    if (tls)
        co.ssl = &inst->ssl_opts;
    inst->conn_opts = co;

    if (!host->get_string(host->host_ctx, "client_id_prefix", &prefix))
        prefix = "outbox-relay-";
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)mqtt_now_ms() ^ (uint32_t)(uintptr_t)inst;
    unsigned seq = atomic_fetch_add(&mqtt_instance_seq, 1) + 1;
    int n = snprintf(inst->client_id, sizeof inst->client_id, "%s%ld-%u-%08x", prefix,
                     (long)getpid(), seq, rnd);
    if (n < 0 || (size_t)n >= sizeof inst->client_id) {
        snprintf(errstr, errstr_size, "option client_id_prefix is too long");
        return -1;
    }

    /* paho has no generic key/value settings: say so rather than ignore them */
    const char *pk, *pv;
    if (host->get_property(host->host_ctx, 0, &pk, &pv)) {
        snprintf(errstr, errstr_size,
                 "the mqtt driver takes no native properties (got \"%.100s\"); use options",
                 pk);
        return -1;
    }
    return 0;
}

static void mqtt_free(mqtt_inst *inst)
{
    if (inst->client)
        MQTTAsync_destroy(&inst->client);
    pthread_cond_destroy(&inst->cond);
    pthread_mutex_destroy(&inst->mu);
    free(inst->slots);
    free(inst->free_idx);
    free(inst->props);
    free(inst);
}

/* paho insists on a messageArrived callback; we never subscribe */
static int mqtt_discard_arrived(void *ctx, char *topic, int len, MQTTAsync_message *m)
{
    (void)ctx;
    (void)len;
    MQTTAsync_freeMessage(&m);
    MQTTAsync_free(topic);
    return 1;
}

static void mqtt_close(mqtt_inst *inst);

static mqtt_inst *mqtt_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    mqtt_inst *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&inst->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&inst->mu, NULL);

    if (mqtt_read_options(inst, errstr, errstr_size))
        goto fail;
    inst->slots = calloc((size_t)inst->window, sizeof *inst->slots);
    inst->free_idx = calloc((size_t)inst->window, sizeof *inst->free_idx);
    inst->props_cap = 16;
    inst->props = calloc(inst->props_cap, sizeof *inst->props);
    if (!inst->slots || !inst->free_idx || !inst->props) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    for (int i = inst->window - 1; i >= 0; i--) {
        inst->slots[i].inst = inst;
        inst->free_idx[inst->free_n++] = i;
    }

    MQTTAsync_createOptions cro = MQTTAsync_createOptions_initializer5;
    cro.sendWhileDisconnected = 0; /* the database row is the buffer */
    cro.maxBufferedMessages = inst->window + 16;
    cro.restoreMessages = 0;
    cro.persistQoS0 = 0;
    int rc = MQTTAsync_createWithOptions(&inst->client, inst->url, inst->client_id,
                                         MQTTCLIENT_PERSISTENCE_NONE, NULL, &cro);
    if (rc != MQTTASYNC_SUCCESS) {
        inst->client = NULL;
        snprintf(errstr, errstr_size, "cannot create MQTT client for %s: %s", inst->url,
                 MQTTAsync_strerror(rc));
        goto fail;
    }
    if ((rc = MQTTAsync_setCallbacks(inst->client, inst, mqtt_on_connection_lost,
                                     mqtt_discard_arrived, NULL)) != MQTTASYNC_SUCCESS ||
        (rc = MQTTAsync_setDisconnected(inst->client, inst, mqtt_on_disconnected)) !=
            MQTTASYNC_SUCCESS) {
        snprintf(errstr, errstr_size, "cannot set MQTT callbacks: %s", MQTTAsync_strerror(rc));
        goto fail;
    }

    inst->backoff_ms = inst->reconnect_min_ms;
    inst->next_connect_ms = 0;
    if ((rc = pthread_create(&inst->timer, NULL, mqtt_timer_main, inst)) != 0) {
        snprintf(errstr, errstr_size, "cannot start timer thread: %s", strerror(rc));
        goto fail;
    }
    inst->timer_started = 1;

    /* Wait briefly for the first connect so the first batch is not refused
     * wholesale; a broker that is down is not a config error (we keep
     * retrying), but refused credentials are. */
    struct timespec ts;
    mqtt_abstime(MQTT_FIRST_CONNECT_WAIT_MS, &ts);
    pthread_mutex_lock(&inst->mu);
    while (!inst->connected && !inst->last_connect_err[0])
        if (pthread_cond_timedwait(&inst->cond, &inst->mu, &ts) == ETIMEDOUT)
            break;
    int code = inst->last_connect_code;
    int auth_refused = !inst->connected && (code == MQTTREASONCODE_BAD_USER_NAME_OR_PASSWORD ||
                                            code == MQTTREASONCODE_NOT_AUTHORIZED ||
                                            code == MQTTREASONCODE_CLIENT_IDENTIFIER_NOT_VALID ||
                                            code == MQTTREASONCODE_BANNED);
    char why[MQTT_DETAIL_MAX];
    snprintf(why, sizeof why, "%s", inst->last_connect_err);
    pthread_mutex_unlock(&inst->mu);
    if (auth_refused) {
        snprintf(errstr, errstr_size, "broker %s refused the connection: %s", inst->url, why);
        mqtt_close(inst);
        mqtt_free(inst);
        return NULL;
    }
    return inst;

fail:
    mqtt_free(inst);
    return NULL;
}

/* ------------------------------------------------------------ flush, close */

static size_t mqtt_flush(mqtt_inst *inst, int timeout_ms)
{
    struct timespec ts;
    mqtt_abstime(timeout_ms > 0 ? timeout_ms : 0, &ts);
    pthread_mutex_lock(&inst->mu);
    while (inst->inflight > 0 && timeout_ms > 0)
        if (pthread_cond_timedwait(&inst->cond, &inst->mu, &ts) == ETIMEDOUT)
            break;
    size_t left = (size_t)inst->inflight;
    pthread_mutex_unlock(&inst->mu);
    return left;
}

static void mqtt_on_disconnect_done(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_inst *inst = ctx;
    (void)resp;
    pthread_mutex_lock(&inst->mu);
    inst->disconnect_done = 1;
    pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_on_disconnect_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    (void)resp;
    mqtt_on_disconnect_done(ctx, NULL);
}

static void mqtt_close(mqtt_inst *inst)
{
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        pthread_mutex_unlock(&inst->mu);
        return;
    }
    int n = mqtt_fail_all_locked(inst, "aborted: driver closed");
    /* from here on every paho callback is a no-op for completions */
    inst->closed = 1;
    inst->stopping = 1;
    int connected = inst->connected;
    pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);

    if (inst->timer_started) {
        pthread_join(inst->timer, NULL);
        inst->timer_started = 0;
    }
    if (connected && inst->client) {
        MQTTAsync_disconnectOptions dopts = MQTTAsync_disconnectOptions_initializer5;
        dopts.timeout = 1000;
        dopts.onSuccess5 = mqtt_on_disconnect_done;
        dopts.onFailure5 = mqtt_on_disconnect_fail;
        dopts.context = inst;
        if (MQTTAsync_disconnect(inst->client, &dopts) == MQTTASYNC_SUCCESS) {
            struct timespec ts;
            mqtt_abstime(1500, &ts);
            pthread_mutex_lock(&inst->mu);
            while (!inst->disconnect_done)
                if (pthread_cond_timedwait(&inst->cond, &inst->mu, &ts) == ETIMEDOUT)
                    break;
            pthread_mutex_unlock(&inst->mu);
        }
    }
    /* Destroying the client here guarantees no paho callback runs after close. */
    if (inst->client)
        MQTTAsync_destroy(&inst->client);
    inst->client = NULL;
    if (inst->ever_connected || n)
        inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                        "closed %s: %llu acknowledged (%llu with no matching subscribers), "
                        "%llu failed, %llu timed out, %llu lost with the connection, %d aborted",
                        inst->client_id, (unsigned long long)inst->n_ok,
                        (unsigned long long)inst->n_no_subscribers,
                        (unsigned long long)inst->n_failed, (unsigned long long)inst->n_timeout,
                        (unsigned long long)inst->n_lost, n);
}

static void mqtt_destroy(mqtt_inst *inst)
{
    if (!inst)
        return;
    mqtt_close(inst);
    mqtt_free(inst);
}

static obx_status mqtt_publish_entry(obx_instance *inst, const obx_message *msgs, size_t count,
                                     obx_status *accept)
{
    return mqtt_publish_batch(inst, msgs, count, accept);
}

static const obx_driver_def mqtt_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "mqtt",
    .version = "0.1.0",
    .description = "MQTT 5 (paho-mqtt-c async): QoS 1/2, PUBACK reason codes, user properties",
    .options = mqtt_options,
    .create = mqtt_create,
    .publish_batch = mqtt_publish_entry,
    .poll = NULL, /* completions come from paho's and the timer thread */
    .flush = mqtt_flush,
    .close = mqtt_close,
    .destroy = mqtt_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &mqtt_def;
}
