/*
 * mosquitto driver: declared options and reading them at create. The names
 * are the mqtt driver's where they mean the same (drivers/mqtt/README.md).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mosq_check.h"
#include "mosq_conf.h"

/* Only used to make client ids unique within a process. */
static atomic_uint mosq_instance_seq;

const obx_option mosq_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,
     "broker URL: tcp://host:port or ssl://host:port (logged with any user:password@ masked)"},
    {"client_id_prefix", OBX_OPT_STRING, 0,
     "client id prefix; pid, instance number and a random suffix are appended"},
    {"username", OBX_OPT_STRING, 0, "user name"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (use ${ENV_VAR})"},
    {"qos", OBX_OPT_INT, 0, "1 or 2; 0 is refused: it cannot be acknowledged"},
    {"max_in_flight", OBX_OPT_INT, 0,
     "max unacknowledged publishes per instance (libmosquitto's send maximum; the broker's "
     "Receive Maximum caps it); the rest waits in libmosquitto's queue"},
    {"window_wait_ms", OBX_OPT_INT, 0,
     "while (re)connecting, a batch waits up to this long for the connection, then is refused "
     "as unavailable (0 refuses at once)"},
    {"publish_timeout_ms", OBX_OPT_INT, 0,
     "a publish not acknowledged in this time completes UNAVAILABLE and the connection is "
     "made again"},
    {"content_type", OBX_OPT_STRING, 0,
     "content type property, a template or a constant (default: the row's)"},
    {"message_expiry_s", OBX_OPT_INT, 0,
     "message expiry interval property, in seconds as MQTT defines it (0: never expires)"},
    {"heartbeat_ms", OBX_OPT_INT, 0,
     "MQTT keep-alive interval (rounded up to whole seconds, MQTT's unit; at least 5 s)"},
    {"connect_timeout_ms", OBX_OPT_INT, 0, "TCP/TLS + CONNECT/CONNACK timeout"},
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

/* Parallel to mosq_options: what the host enforces (defaults, ranges). */
const obx_option_spec mosq_option_specs[] = {
    {NULL, 0, 0, NULL, NULL},            /* url */
    {"outbox-relay-", 0, 0, NULL, NULL}, /* client_id_prefix */
    {NULL, 0, 0, NULL, NULL},            /* username */
    {NULL, 0, 0, NULL, NULL},            /* password */
    {"1", 1, 2, NULL, NULL},             /* qos */
    {"64", 1, 65535, NULL, NULL},        /* max_in_flight */
    {"2000", 0, 60000, NULL, NULL},      /* window_wait_ms */
    {"30000", 100, 3600000, NULL, NULL}, /* publish_timeout_ms */
    {NULL, 0, 0, NULL, NULL},            /* content_type */
    {"0", 0, 4294967295.0, NULL, NULL},  /* message_expiry_s */
    {"30000", 5000, 65535000, NULL, NULL}, /* heartbeat_ms */
    {"10000", 1, 600000, NULL, NULL},    /* connect_timeout_ms */
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

_Static_assert(sizeof mosq_options / sizeof *mosq_options ==
                   sizeof mosq_option_specs / sizeof *mosq_option_specs,
               "mosq_option_specs must be parallel to mosq_options");

/* An INT option: the host's value, or the declared default (a 1.0 host
 * hands out no defaults); the declared range checked again for that host. */
static int mosq_opt_int(const obx_host *host, const char *name, int64_t *out, char *errstr,
                        size_t errstr_size)
{
    const obx_option_spec *sp = NULL;
    for (size_t i = 0; mosq_options[i].name; i++)
        if (strcmp(mosq_options[i].name, name) == 0)
            sp = &mosq_option_specs[i];
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

static int mosq_read_tls(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    int any = 0, verify = 1, set;
    const char *names[] = {"tls_ca", "tls_cert", "tls_key", "tls_key_password"};
    const char **dst[] = {&inst->tls_ca, &inst->tls_cert, &inst->tls_key,
                          &inst->tls_key_password};
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

static int mosq_read_client_id(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    const char *prefix = NULL;
    if (!inst->host->get_string(inst->host->host_ctx, "client_id_prefix", &prefix) || !prefix)
        prefix = "outbox-relay-";
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)time(NULL) ^ (uint32_t)(uintptr_t)inst;
    unsigned seq = atomic_fetch_add(&mosq_instance_seq, 1) + 1;
    int n = snprintf(inst->client_id, sizeof inst->client_id, "%s%ld-%u-%08x", prefix,
                     (long)getpid(), seq, rnd);
    if (n < 0 || (size_t)n >= sizeof inst->client_id) {
        snprintf(errstr, errstr_size, "option client_id_prefix is too long");
        return -1;
    }
    return 0;
}

int mosq_read_options(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = NULL, *s, *pk, *pv;
    int64_t v;

    if (!host->get_string(host->host_ctx, "url", &url) || !url || !*url) {
        snprintf(errstr, errstr_size,
                 "option url is required (tcp://host:port or ssl://host:port)");
        return -1;
    }
    if (mosq_url_parse(url, &inst->url, errstr, errstr_size) < 0)
        return -1;
    mosq_url_mask(url, inst->url_shown, sizeof inst->url_shown);

    if (host->get_int(host->host_ctx, "qos", &v) && v == 0) {
        snprintf(errstr, errstr_size,
                 "option qos = 0 is refused: QoS 0 has no acknowledgement, so the relay could "
                 "never know a message was delivered (use 1 or 2)");
        return -1;
    }
    struct {
        const char *name;
        int64_t *out;
    } ints[] = {
        {"publish_timeout_ms", &inst->publish_timeout_ms},
        {"window_wait_ms", &inst->window_wait_ms},
        {"connect_timeout_ms", &inst->connect_timeout_ms},
        {"reconnect_min_ms", &inst->reconnect_min_ms},
        {"reconnect_max_ms", &inst->reconnect_max_ms},
        {"message_expiry_s", &inst->message_expiry_s},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (mosq_opt_int(host, ints[i].name, ints[i].out, errstr, errstr_size) < 0)
            return -1;
    if (mosq_opt_int(host, "qos", &v, errstr, errstr_size) < 0)
        return -1;
    inst->qos = (int)v;
    if (mosq_opt_int(host, "max_in_flight", &v, errstr, errstr_size) < 0)
        return -1;
    inst->max_in_flight = (int)v;
    if (mosq_opt_int(host, "heartbeat_ms", &v, errstr, errstr_size) < 0)
        return -1;
    inst->keepalive_s = (int)((v + 999) / 1000); /* MQTT counts in seconds */
    if (inst->reconnect_max_ms < inst->reconnect_min_ms) {
        snprintf(errstr, errstr_size,
                 "option reconnect_max_ms = %lld: must be at least reconnect_min_ms (%lld)",
                 (long long)inst->reconnect_max_ms, (long long)inst->reconnect_min_ms);
        return -1;
    }

    if (host->get_string(host->host_ctx, "content_type", &s) && s && *s) {
        char why[256];
        if (obx_ce_template_check(s, why, sizeof why) < 0) {
            snprintf(errstr, errstr_size, "option content_type: %s", why);
            return -1;
        }
        inst->content_type = s;
    }
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
        mosq_read_client_id(inst, errstr, errstr_size) < 0)
        return -1;

    /* libmosquitto has no generic key/value settings: say so rather than ignore them */
    if (host->get_property(host->host_ctx, 0, &pk, &pv)) {
        snprintf(errstr, errstr_size,
                 "no native properties are taken (got \"%.100s\"); use options", pk);
        return -1;
    }
    return 0;
}
