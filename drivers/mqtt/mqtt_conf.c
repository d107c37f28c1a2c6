/*
 * MQTT driver: declared options and reading them at create; the options
 * the mosquitto driver takes too are read in drivers/mqtt_common/mqc_conf.c.
 */
#include <stdio.h>
#include <string.h>

#include "mqc_conf.h"
#include "mqc_text.h"
#include "mqtt_conf.h"
#include "mqtt_conn.h"

const obx_option mqtt_options[] = {
    MQC_OPTIONS_CLIENT,
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
    MQC_OPTIONS_PROPERTIES,
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
    MQC_OPTIONS_RECONNECT_TLS,
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

/* Parallel to mqtt_options: what the host enforces (defaults, ranges). */
const obx_option_spec mqtt_option_specs[] = {
    MQC_SPECS_CLIENT,
    {"64", 1, 65535, NULL, "window"},    /* max_in_flight */
    {"2000", 0, 60000, NULL, NULL},      /* window_wait_ms */
    {"30000", 100, 3600000, NULL, NULL}, /* publish_timeout_ms */
    {"3", 0, 60000, NULL, NULL},         /* nudge_ms */
    MQC_SPECS_PROPERTIES,
    {NULL, 0, 0, NULL, NULL},           /* response_topic */
    {NULL, 0, 0, NULL, NULL},           /* correlation_data */
    {"30000", 0, 65535000, NULL, NULL}, /* heartbeat_ms */
    {NULL, 0, 65535, NULL, NULL},       /* keepalive_s */
    {"10000", 1, 600000, NULL, NULL},   /* connect_timeout_ms */
    {NULL, 1, 600, NULL, NULL},         /* connect_timeout_s */
    MQC_SPECS_RECONNECT_TLS,
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};

_Static_assert(sizeof mqtt_options / sizeof *mqtt_options ==
                   sizeof mqtt_option_specs / sizeof *mqtt_option_specs,
               "mqtt_option_specs must be parallel to mqtt_options");

static const mqc_option_table mqtt_table = {mqtt_options, mqtt_option_specs};

/* The property templates: each checked here, expanded per message
 * (mqc_shape.c); an empty one is not set. A constant response topic must be
 * a topic name already. */
static int mqtt_templates_read(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    if (mqc_template_read(host, "content_type", &inst->tpl.content_type, errstr, errstr_size) < 0 ||
        mqc_template_read(host, "response_topic", &inst->tpl.response_topic, errstr, errstr_size) <
            0 ||
        mqc_template_read(host, "correlation_data", &inst->tpl.correlation_data, errstr,
                          errstr_size) < 0)
        return -1;
    const char *rt = inst->tpl.response_topic;
    const char *bad = rt && !strstr(rt, "${") ? mqc_topic_problem(rt) : NULL;
    if (bad) {
        snprintf(errstr, errstr_size, "option response_topic = \"%.64s\": %s", rt, bad);
        return -1;
    }
    return 0;
}

/* A duration option NAME_ms that replaced OLD_s (deprecated, converted):
 * the old one wins when set, the user wrote it on purpose. */
static int mqtt_opt_ms(const obx_host *host, const char *name, const char *old_s, int64_t *out,
                       char *errstr, size_t errstr_size)
{
    int64_t s;
    int rc = mqc_opt_int(host, &mqtt_table, old_s, &s, errstr, errstr_size);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        *out = s * 1000;
        return 0;
    }
    return mqc_opt_int(host, &mqtt_table, name, out, errstr, errstr_size) < 0 ? -1 : 0;
}

/* paho's TLS options; -1 with errstr when they need an ssl:// url. */
static int mqtt_tls_read(mqtt_inst *inst, int tls, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *s;
    MQTTAsync_SSLOptions so = MQTTAsync_SSLOptions_initializer;
    int any_tls = 0,
        verify = strcmp(mqc_spec(&mqtt_table, "tls_verify")->default_value, "true") == 0;
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
    return 0;
}

int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *s;
    int64_t v;

    if (mqc_url_read(host, &url, inst->url_shown, sizeof inst->url_shown, errstr, errstr_size) < 0)
        return -1;
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

    if (mqc_qos_read(host, &mqtt_table, &inst->qos, errstr, errstr_size) < 0)
        return -1;
    if (mqc_opt_int(host, &mqtt_table, "max_in_flight", &v, errstr, errstr_size) < 0)
        return -1;
    inst->window = (int)v;
    const char *ints[] = {"window_wait_ms", "publish_timeout_ms", "message_expiry_s", "nudge_ms"};
    int64_t *outs[] = {&inst->window_wait_ms, &inst->publish_timeout_ms, &inst->message_expiry_s,
                       &inst->nudge_ms};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (mqc_opt_int(host, &mqtt_table, ints[i], outs[i], errstr, errstr_size) < 0)
            return -1;
    if (mqtt_templates_read(inst, errstr, errstr_size) < 0)
        return -1;
    obx_ce_config_read(host, &inst->ce);
    if (mqc_reconnect_read(host, &mqtt_table, &inst->reconnect_min_ms, &inst->reconnect_max_ms,
                           errstr, errstr_size) < 0)
        return -1;

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
    if (mqtt_tls_read(inst, tls, errstr, errstr_size) < 0)
        return -1;
    if (tls)
        co.ssl = &inst->ssl_opts;
    inst->conn_opts = co;

    if (mqc_client_id_make(host, &mqtt_table, inst->client_id, sizeof inst->client_id, errstr,
                           errstr_size) < 0)
        return -1;
    /* paho has no generic key/value settings: say so rather than ignore them */
    return mqc_no_native_properties(host, errstr, errstr_size);
}
