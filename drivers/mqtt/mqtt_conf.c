/*
 * MQTT driver: declared options and reading them at create.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mqtt_clock.h"
#include "mqtt_conf.h"
#include "mqtt_conn.h"
#include "mqtt_item.h"

/* Only used to make client ids unique within a process. */
static atomic_uint mqtt_instance_seq;

/* The url as it may be printed: its user:password@ part, if any, masked as
 * "***@". */
static void mqtt_mask_url(const char *url, char *out, size_t size)
{
    const char *rest = strstr(url, "://");
    const char *at = rest ? strrchr(rest + 3, '@') : NULL;
    if (!at)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "%.*s***%s", (int)(rest + 3 - url), url, at);
}

const obx_option mqtt_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,
     "broker URL: tcp://host:port or ssl://host:port (logged with any user:password@ masked)"},
    {"client_id_prefix", OBX_OPT_STRING, 0,
     "client id prefix; pid, instance number and a random suffix are appended"},
    {"username", OBX_OPT_STRING, 0, "user name"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (use ${ENV_VAR})"},
    {"qos", OBX_OPT_INT, 0, "1 or 2; 0 is refused: it cannot be acknowledged"},
    {"max_in_flight", OBX_OPT_INT, 0,
     "max unacknowledged publishes per instance (also capped by the broker's Receive Maximum); "
     "a larger batch waits in the driver and goes out as acknowledgements arrive"},
    {"window_wait_ms", OBX_OPT_INT, 0,
     "while (re)connecting, a batch waits up to this long for the connection, then is refused "
     "as unavailable (0 refuses at once); a full window never makes a batch wait"},
    {"publish_timeout_ms", OBX_OPT_INT, 0,
     "a publish not acknowledged in this time completes RETRIABLE"},
    {"nudge_ms", OBX_OPT_INT, 0,
     "a batch's tail without an acknowledgement for this long gets a nudge (an UNSUBSCRIBE "
     "that carries the TCP ACK a broker with Nagle on waits for); 0: never"},
    {"content_type", OBX_OPT_STRING, 0,
     "content type property, a template or a constant (default: the row's)"},
    {"message_expiry_s", OBX_OPT_INT, 0,
     "message expiry interval property, in seconds as MQTT defines it (0: never expires)"},
    {"response_topic", OBX_OPT_STRING, 0,
     "response topic property, a template, e.g. replies/${aggregate_type}/${aggregate_id}"},
    {"correlation_data", OBX_OPT_STRING, 0,
     "correlation data property, a template, e.g. ${event_id}"},
    {"heartbeat_ms", OBX_OPT_INT, 0,
     "MQTT keep-alive interval (rounded up to whole seconds, MQTT's unit; 0: off)"},
    {"keepalive_s", OBX_OPT_INT, OBX_OPT_DEPRECATED,
     "deprecated: use heartbeat_ms (this is the same interval in seconds)"},
    {"connect_timeout_ms", OBX_OPT_INT, 0,
     "TCP/TLS + CONNECT timeout (rounded up to whole seconds, paho's unit)"},
    {"connect_timeout_s", OBX_OPT_INT, OBX_OPT_DEPRECATED,
     "deprecated: use connect_timeout_ms (this is the same timeout in seconds)"},
    {"reconnect_min_ms", OBX_OPT_INT, 0, "first reconnect delay, doubled per failure"},
    {"reconnect_max_ms", OBX_OPT_INT, 0, "longest reconnect delay"},
    {"tls_ca", OBX_OPT_STRING, 0, "CA certificate file (PEM) for ssl:// URLs"},
    {"tls_cert", OBX_OPT_STRING, 0, "client certificate file (PEM)"},
    {"tls_key", OBX_OPT_STRING, 0, "client private key file (PEM)"},
    {"tls_key_password", OBX_OPT_STRING, OBX_OPT_SECRET, "private key pass phrase"},
    {"tls_verify", OBX_OPT_BOOL, 0, "verify the server certificate and host name"},
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

/* Parallel to mqtt_options: what the host enforces (defaults, ranges). */
const obx_option_spec mqtt_option_specs[] = {
    {NULL, 0, 0, NULL, NULL},            /* url */
    {"outbox-relay-", 0, 0, NULL, NULL}, /* client_id_prefix */
    {NULL, 0, 0, NULL, NULL},            /* username */
    {NULL, 0, 0, NULL, NULL},            /* password */
    {"1", 1, 2, NULL, NULL},             /* qos */
    {"64", 1, 65535, NULL, "window"},    /* max_in_flight */
    {"2000", 0, 60000, NULL, NULL},      /* window_wait_ms */
    {"30000", 100, 3600000, NULL, NULL}, /* publish_timeout_ms */
    {"3", 0, 60000, NULL, NULL},         /* nudge_ms */
    {NULL, 0, 0, NULL, NULL},            /* content_type */
    {"0", 0, 4294967295.0, NULL, NULL},  /* message_expiry_s */
    {NULL, 0, 0, NULL, NULL},            /* response_topic */
    {NULL, 0, 0, NULL, NULL},            /* correlation_data */
    {"30000", 0, 65535000, NULL, NULL},  /* heartbeat_ms */
    {NULL, 0, 65535, NULL, NULL},        /* keepalive_s */
    {"10000", 1, 600000, NULL, NULL},    /* connect_timeout_ms */
    {NULL, 1, 600, NULL, NULL},          /* connect_timeout_s */
    {"100", 10, 600000, NULL, NULL},     /* reconnect_min_ms */
    {"5000", 10, 3600000, NULL, NULL},   /* reconnect_max_ms */
    {NULL, 0, 0, NULL, NULL},            /* tls_ca */
    {NULL, 0, 0, NULL, NULL},            /* tls_cert */
    {NULL, 0, 0, NULL, NULL},            /* tls_key */
    {NULL, 0, 0, NULL, NULL},            /* tls_key_password */
    {"true", 0, 0, NULL, NULL},          /* tls_verify */
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};

_Static_assert(sizeof mqtt_options / sizeof *mqtt_options ==
                   sizeof mqtt_option_specs / sizeof *mqtt_option_specs,
               "mqtt_option_specs must be parallel to mqtt_options");

static const obx_option_spec *mqtt_spec(const char *name)
{
    for (size_t i = 0; mqtt_options[i].name; i++)
        if (strcmp(mqtt_options[i].name, name) == 0)
            return &mqtt_option_specs[i];
    return NULL;
}

/* The property templates: each checked here, expanded per message
 * (mqtt_item.c); an empty one is not set. A constant response topic must be
 * a topic name already. */
static int mqtt_templates_read(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *names[] = {"content_type", "response_topic", "correlation_data"};
    const char **tpl[] = {&inst->content_type, &inst->response_topic, &inst->correlation_data};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *s = NULL;
        char why[256];
        if (!host->get_string(host->host_ctx, names[i], &s) || !s || !*s)
            continue;
        if (obx_ce_template_check(s, why, sizeof why) < 0) {
            snprintf(errstr, errstr_size, "option %s: %s", names[i], why);
            return -1;
        }
        *tpl[i] = s;
    }
    const char *rt = inst->response_topic;
    const char *bad = rt && !strstr(rt, "${") ? mqtt_topic_problem(rt) : NULL;
    if (bad) {
        snprintf(errstr, errstr_size, "option response_topic = \"%.64s\": %s", rt, bad);
        return -1;
    }
    return 0;
}

/* An INT option: the host's value, or the declared default while a host
 * that does not hand out defaults says it is unset. The range is the host's
 * to enforce; checking the declared one again here keeps a 1.0 host from
 * handing the driver a value it cannot work with. Returns 1 when set (or
 * defaulted), 0 when unset without default, -1 on error. */
static int mqtt_opt_int(const obx_host *host, const char *name, int64_t *out, char *errstr,
                        size_t errstr_size)
{
    const obx_option_spec *sp = mqtt_spec(name);
    int64_t v = 0;
    if (!host->get_int(host->host_ctx, name, &v)) {
        if (!sp || !sp->default_value)
            return 0;
        v = strtoll(sp->default_value, NULL, 10);
    }
    if (sp && sp->min < sp->max && ((double)v < sp->min || (double)v > sp->max)) {
        snprintf(errstr, errstr_size, "option %s = %lld: must be between %.0f and %.0f", name,
                 (long long)v, sp->min, sp->max);
        return -1;
    }
    *out = v;
    return 1;
}

/* A duration option NAME_ms that replaced OLD_s (deprecated, converted):
 * the old one wins when set, the user wrote it on purpose. */
static int mqtt_opt_ms(const obx_host *host, const char *name, const char *old_s, int64_t *out,
                       char *errstr, size_t errstr_size)
{
    int64_t s;
    int rc = mqtt_opt_int(host, old_s, &s, errstr, errstr_size);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        *out = s * 1000;
        return 0;
    }
    return mqtt_opt_int(host, name, out, errstr, errstr_size) < 0 ? -1 : 0;
}

int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *prefix, *s;
    int64_t v;

    if (!host->get_string(host->host_ctx, "url", &url) || !*url) {
        snprintf(errstr, errstr_size,
                 "option url is required (tcp://host:port or ssl://host:port)");
        return -1;
    }
    int tls = strncmp(url, "ssl://", 6) == 0 || strncmp(url, "mqtts://", 8) == 0;
    if (!tls && strncmp(url, "tcp://", 6) != 0 && strncmp(url, "mqtt://", 7) != 0) {
        snprintf(errstr, errstr_size, "option url must start with tcp:// or ssl://");
        return -1;
    }
    if (strlen(url) >= sizeof inst->url) {
        snprintf(errstr, errstr_size, "option url is too long");
        return -1;
    }
    strcpy(inst->url, url);
    mqtt_mask_url(url, inst->url_shown, sizeof inst->url_shown);

    if (host->get_int(host->host_ctx, "qos", &v) && v == 0) {
        snprintf(errstr, errstr_size,
                 "option qos = 0 is refused: QoS 0 has no acknowledgement, so the relay could "
                 "never know a message was delivered (use 1 or 2)");
        return -1;
    }
    if (mqtt_opt_int(host, "qos", &v, errstr, errstr_size) < 0)
        return -1;
    inst->qos = (int)v;
    if (mqtt_opt_int(host, "max_in_flight", &v, errstr, errstr_size) < 0)
        return -1;
    inst->window = (int)v;
    if (mqtt_opt_int(host, "window_wait_ms", &inst->window_wait_ms, errstr, errstr_size) < 0 ||
        mqtt_opt_int(host, "publish_timeout_ms", &inst->publish_timeout_ms, errstr, errstr_size) <
            0 ||
        mqtt_opt_int(host, "message_expiry_s", &inst->message_expiry_s, errstr, errstr_size) < 0 ||
        mqtt_opt_int(host, "nudge_ms", &inst->nudge_ms, errstr, errstr_size) < 0)
        return -1;
    if (mqtt_templates_read(inst, errstr, errstr_size) < 0)
        return -1;
    obx_ce_config_read(host, &inst->ce);
    if (mqtt_opt_int(host, "reconnect_min_ms", &inst->reconnect_min_ms, errstr, errstr_size) < 0 ||
        mqtt_opt_int(host, "reconnect_max_ms", &inst->reconnect_max_ms, errstr, errstr_size) < 0)
        return -1;
    if (inst->reconnect_max_ms < inst->reconnect_min_ms) {
        snprintf(errstr, errstr_size,
                 "option reconnect_max_ms = %lld: must be at least "
                 "reconnect_min_ms (%lld)",
                 (long long)inst->reconnect_max_ms, (long long)inst->reconnect_min_ms);
        return -1;
    }

    MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
    if (mqtt_opt_ms(host, "heartbeat_ms", "keepalive_s", &v, errstr, errstr_size))
        return -1;
    co.keepAliveInterval = (int)((v + 999) / 1000); /* paho and MQTT count in seconds */
    if (mqtt_opt_ms(host, "connect_timeout_ms", "connect_timeout_s", &v, errstr, errstr_size))
        return -1;
    co.connectTimeout = (int)((v + 999) / 1000);
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
    int any_tls = 0, verify = strcmp(mqtt_spec("tls_verify")->default_value, "true") == 0;
    if (host->get_string(host->host_ctx, "tls_ca", &s))
        so.trustStore = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_cert", &s))
        so.keyStore = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_key", &s))
        so.privateKey = s, any_tls = 1;
    if (host->get_string(host->host_ctx, "tls_key_password", &s))
        so.privateKeyPassword = s, any_tls = 1;
    int set_verify;
    if (host->get_bool(host->host_ctx, "tls_verify", &set_verify) && set_verify != verify) {
        verify = set_verify; /* the host may hand out the default: only a change means TLS */
        any_tls = 1;
    }
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
        prefix = mqtt_spec("client_id_prefix")->default_value;
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
                 "no native properties are taken (got \"%.100s\"); use options", pk);
        return -1;
    }
    return 0;
}
