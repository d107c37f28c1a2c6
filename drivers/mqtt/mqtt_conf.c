/*
 * MQTT driver: declared options and reading them at create.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mqtt_int.h"

#define MQTT_DEFAULT_WINDOW 100
#define MQTT_DEFAULT_TIMEOUT_MS 30000

/* Only used to make client ids unique within a process. */
static atomic_uint mqtt_instance_seq;

const obx_option mqtt_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED, "broker URL: tcp://host:port or ssl://host:port"},
    {"client_id_prefix", OBX_OPT_STRING, 0,
     "client id prefix; pid, instance number and a random suffix are appended"},
    {"username", OBX_OPT_STRING, 0, "user name"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (use ${ENV_VAR})"},
    {"qos", OBX_OPT_INT, 0, "1 (default) or 2; 0 is refused: it cannot be acknowledged"},
    {"window", OBX_OPT_INT, 0, "max publishes in flight per instance (default 100)"},
    {"window_wait_ms", OBX_OPT_INT, 0,
     "with the window full or while reconnecting, publish waits up to this long per batch, "
     "then refuses RETRIABLE (default 2000; 0 refuses at once)"},
    {"publish_timeout_ms", OBX_OPT_INT, 0,
     "a publish not acknowledged in this time completes RETRIABLE (default 30000)"},
    {"content_type", OBX_OPT_STRING, 0, "content type property (default: the row's)"},
    {"message_expiry_s", OBX_OPT_INT, 0, "message expiry interval property (default none)"},
    {"keepalive_s", OBX_OPT_INT, 0, "keep-alive interval (default 30)"},
    {"connect_timeout_s", OBX_OPT_INT, 0, "TCP/TLS+CONNECT timeout (default 10)"},
    {"reconnect_min_ms", OBX_OPT_INT, 0,
     "first reconnect delay (default 100), doubled per failure"},
    {"reconnect_max_ms", OBX_OPT_INT, 0, "longest reconnect delay (default 5000)"},
    {"tls_ca", OBX_OPT_STRING, 0, "CA certificate file (PEM) for ssl:// URLs"},
    {"tls_cert", OBX_OPT_STRING, 0, "client certificate file (PEM)"},
    {"tls_key", OBX_OPT_STRING, 0, "client private key file (PEM)"},
    {"tls_key_password", OBX_OPT_STRING, OBX_OPT_SECRET, "private key pass phrase"},
    {"tls_verify", OBX_OPT_BOOL, 0, "verify the server certificate and host name (default true)"},
    {NULL, 0, 0, NULL},
};

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

int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *prefix = "outbox-relay-", *s;
    int64_t v;

    if (!host->get_string(host->host_ctx, "url", &url) || !*url) {
        snprintf(errstr, errstr_size,
                 "option url is required (tcp://host:port or ssl://host:port)");
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
                 "the mqtt driver takes no native properties (got \"%.100s\"); use options", pk);
        return -1;
    }
    return 0;
}
