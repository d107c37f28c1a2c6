/*
 * mosquitto driver: declared options and reading them at create. The names
 * are the mqtt driver's where they mean the same (drivers/mqtt/README.md);
 * those both take are read in drivers/mqtt_common/mqc_conf.c.
 */
#include <stdio.h>

#include "mosq_conf.h"

const obx_option mosq_options[] = {
    MQC_OPTIONS_CLIENT,
    {"max_in_flight", OBX_OPT_INT, 0,
     "max unacknowledged publishes per instance (libmosquitto's send maximum; the broker's "
     "Receive Maximum caps it); the rest waits in libmosquitto's queue"},
    {"window_wait_ms", OBX_OPT_INT, 0,
     "while (re)connecting, a batch waits up to this long for the connection, then is refused "
     "as unavailable (0 refuses at once)"},
    {"publish_timeout_ms", OBX_OPT_INT, 0,
     "a publish not acknowledged in this time completes UNAVAILABLE and the connection is "
     "made again"},
    MQC_OPTIONS_PROPERTIES,
    {"heartbeat_ms", OBX_OPT_INT, 0,
     "MQTT keep-alive interval (rounded up to whole seconds, MQTT's unit; at least 5 s)"},
    {"connect_timeout_ms", OBX_OPT_INT, 0, "TCP/TLS + CONNECT/CONNACK timeout"},
    MQC_OPTIONS_RECONNECT_TLS,
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

/* Parallel to mosq_options: what the host enforces (defaults, ranges). */
const obx_option_spec mosq_option_specs[] = {
    MQC_SPECS_CLIENT,
    {"64", 1, 65535, NULL, NULL},        /* max_in_flight */
    {"2000", 0, 60000, NULL, NULL},      /* window_wait_ms */
    {"30000", 100, 3600000, NULL, NULL}, /* publish_timeout_ms */
    MQC_SPECS_PROPERTIES,
    {"30000", 5000, 65535000, NULL, NULL}, /* heartbeat_ms */
    {"10000", 1, 600000, NULL, NULL},      /* connect_timeout_ms */
    MQC_SPECS_RECONNECT_TLS,
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};

_Static_assert(sizeof mosq_options / sizeof *mosq_options ==
                   sizeof mosq_option_specs / sizeof *mosq_option_specs,
               "mosq_option_specs must be parallel to mosq_options");

static const mqc_option_table mosq_table = {mosq_options, mosq_option_specs};

static int mosq_read_tls(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    int any = 0, verify = 1, set;
    const char *names[] = {"tls_ca", "tls_cert", "tls_key", "tls_key_password"};
    const char **dst[] = {&inst->tls_ca, &inst->tls_cert, &inst->tls_key, &inst->tls_key_password};
    for (size_t i = 0; i < 4; i++)
        if (host->get_string(host->host_ctx, names[i], dst[i]) && *dst[i] && **dst[i])
            any = 1;
        else
            *dst[i] = NULL;
    if (host->get_bool(host->host_ctx, "tls_verify", &set) && !set) {
        verify = 0; /* the host may hand out the default: only a change means TLS */
        any = 1;
    }
    if (any && !inst->url.tls) {
        snprintf(errstr, errstr_size, "tls_* options need an ssl:// url");
        return -1;
    }
    if (inst->tls_cert && !inst->tls_key)
        inst->tls_key = inst->tls_cert; /* the key may live in the certificate file */
    if (inst->tls_key && !inst->tls_cert) {
        snprintf(errstr, errstr_size, "option tls_key needs option tls_cert");
        return -1;
    }
    inst->tls_verify = verify;
    return 0;
}

int mosq_read_options(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *s;
    int64_t v;

    if (mqc_url_read(host, &url, inst->url_shown, sizeof inst->url_shown, errstr, errstr_size) <
            0 ||
        mosq_url_parse(url, &inst->url, errstr, errstr_size) < 0)
        return -1;
    if (mqc_qos_read(host, &mosq_table, &inst->qos, errstr, errstr_size) < 0)
        return -1;
    struct {
        const char *name;
        int64_t *out;
    } ints[] = {
        {"publish_timeout_ms", &inst->publish_timeout_ms},
        {"window_wait_ms", &inst->window_wait_ms},
        {"connect_timeout_ms", &inst->connect_timeout_ms},
        {"message_expiry_s", &inst->message_expiry_s},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (mqc_opt_int(host, &mosq_table, ints[i].name, ints[i].out, errstr, errstr_size) < 0)
            return -1;
    if (mqc_opt_int(host, &mosq_table, "max_in_flight", &v, errstr, errstr_size) < 0)
        return -1;
    inst->max_in_flight = (int)v;
    if (mqc_opt_int(host, &mosq_table, "heartbeat_ms", &v, errstr, errstr_size) < 0)
        return -1;
    inst->keepalive_s = (int)((v + 999) / 1000); /* MQTT counts in seconds */
    if (mqc_reconnect_read(host, &mosq_table, &inst->reconnect_min_ms, &inst->reconnect_max_ms,
                           errstr, errstr_size) < 0)
        return -1;
    if (mqc_template_read(host, "content_type", &inst->tpl.content_type, errstr, errstr_size) < 0)
        return -1;
    obx_ce_config_read(host, &inst->ce);

    if (host->get_string(host->host_ctx, "username", &s) && s && *s)
        inst->username = s;
    else if (inst->url.user[0])
        inst->username = inst->url.user;
    if (host->get_string(host->host_ctx, "password", &s) && s)
        inst->password = s;
    else if (inst->url.pass[0])
        inst->password = inst->url.pass;
    if (inst->password && !inst->username) {
        snprintf(errstr, errstr_size, "option password needs option username");
        return -1;
    }
    if (mosq_read_tls(inst, errstr, errstr_size) < 0 ||
        mqc_client_id_make(host, &mosq_table, inst->client_id, sizeof inst->client_id, errstr,
                           errstr_size) < 0)
        return -1;
    /* libmosquitto has no generic key/value settings: say so rather than ignore them */
    return mqc_no_native_properties(host, errstr, errstr_size);
}
