/*
 * RabbitMQ driver: its options, what the host enforces for them, and reading
 * them into the instance.
 *
 * Defaults, ranges and choices are declared once, in rmq_specs; the host
 * checks values against them and hands the default to the getters. A host
 * that does not hand defaults yet (getter returns 0 for an unset option) gets
 * the same default, read from the same table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmq_options.h"
#include "rmq_props.h"

const obx_option rmq_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,
     "amqp://[user:password@]host[:port][/vhost] or amqps://..."},
    {"username", OBX_OPT_STRING, 0, "user name (overrides the URL's)"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (overrides the URL's)"},
    {"vhost", OBX_OPT_STRING, 0, "virtual host (overrides the URL's; without either: /)"},
    {"heartbeat_ms", OBX_OPT_INT, 0,
     "AMQP heartbeat (sent in whole seconds, rounded up): a silent broker is given up after two; "
     "0 = off"},
    {"heartbeat_s", OBX_OPT_INT, OBX_OPT_DEPRECATED, "deprecated: use heartbeat_ms (seconds)"},
    {"connect_timeout_ms", OBX_OPT_INT, 0, "connect, login and RPC timeout"},
    {"write_timeout_ms", OBX_OPT_INT, 0,
     "a broker that takes none of the data written to it for this long (a resource alarm, a "
     "frozen broker) loses the connection, so no write blocks longer (TCP_USER_TIMEOUT); 0 = the "
     "system's"},
    {"mandatory", OBX_OPT_BOOL, 0, "publish mandatory: unroutable messages fail"},
    {"unroutable", OBX_OPT_STRING, 0, "status of an unroutable message"},
    {"persistent", OBX_OPT_BOOL, 0, "delivery_mode 2"},
    {"content_type_default", OBX_OPT_STRING, 0, "content_type when the message has none"},
    {"type", OBX_OPT_STRING, 0, "type property, a template, e.g. ${aggregate_type}.${event_type}"},
    {"message_id", OBX_OPT_STRING, 0,
     "message_id property, a template holding ${event_id}, e.g. ${aggregate_type}-${event_id}"},
    {"content_type", OBX_OPT_STRING, 0,
     "content_type property, a template or a constant (default: the message's, else "
     "content_type_default)"},
    {"priority", OBX_OPT_STRING, 0,
     "priority property, 0 to 255: a number in quotes or a template giving one (default: none)"},
    {"expiration", OBX_OPT_STRING, 0,
     "expiration property, milliseconds: digits in quotes or a template giving them (default: "
     "none)"},
    {"check_exchanges", OBX_OPT_BOOL, 0,
     "check once that a destination exchange exists before publishing to it"},
    {"declare_exchange", OBX_OPT_STRING, 0, "durable exchange to declare on connect"},
    {"declare_exchange_type", OBX_OPT_STRING, 0, "its type"},
    {"declare_queue", OBX_OPT_STRING, 0, "durable queue to declare on connect"},
    {"bind_routing_key", OBX_OPT_STRING, 0, "bind declare_queue to declare_exchange with this key"},
    {"tls_ca", OBX_OPT_STRING, 0, "amqps: CA certificate file (PEM)"},
    {"tls_cert", OBX_OPT_STRING, 0, "amqps: client certificate file (PEM)"},
    {"tls_key", OBX_OPT_STRING, 0, "amqps: client key file (PEM)"},
    {"tls_verify", OBX_OPT_BOOL, 0, "amqps: verify the broker's certificate and name"},
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

static const char *const rmq_unroutable_choices[] = {"permanent", "retriable", NULL};
static const char *const rmq_exchange_types[] = {"direct", "topic", "fanout", "headers", NULL};

/* Parallel to rmq_options. AMQP negotiates the heartbeat in seconds (16 bits). */
const obx_option_spec rmq_specs[] = {
    {NULL, 0, 0, NULL, NULL},                          /* url */
    {NULL, 0, 0, NULL, NULL},                          /* username */
    {NULL, 0, 0, NULL, NULL},                          /* password */
    {NULL, 0, 0, NULL, NULL},                          /* vhost: the URL's, else "/" */
    {"30000", 0, 65535000, NULL, NULL},                /* heartbeat_ms */
    {NULL, 0, 65535, NULL, NULL},                      /* heartbeat_s */
    {"5000", 1, 3600000, NULL, NULL},                  /* connect_timeout_ms */
    {"2000", 0, 3600000, NULL, NULL},                  /* write_timeout_ms */
    {"true", 0, 0, NULL, NULL},                        /* mandatory */
    {"permanent", 0, 0, rmq_unroutable_choices, NULL}, /* unroutable */
    {"true", 0, 0, NULL, NULL},                        /* persistent */
    {NULL, 0, 0, NULL, NULL},                          /* content_type_default */
    {"${event_type}", 0, 0, NULL, NULL},               /* type */
    {"${event_id}", 0, 0, NULL, NULL},                 /* message_id */
    {NULL, 0, 0, NULL, NULL},                          /* content_type */
    {NULL, 0, 0, NULL, NULL},                          /* priority */
    {NULL, 0, 0, NULL, NULL},                          /* expiration */
    {"true", 0, 0, NULL, NULL},                        /* check_exchanges */
    {NULL, 0, 0, NULL, NULL},                          /* declare_exchange */
    {"topic", 0, 0, rmq_exchange_types, NULL},         /* declare_exchange_type */
    {NULL, 0, 0, NULL, NULL},                          /* declare_queue */
    {NULL, 0, 0, NULL, NULL},                          /* bind_routing_key */
    {NULL, 0, 0, NULL, NULL},                          /* tls_ca */
    {NULL, 0, 0, NULL, NULL},                          /* tls_cert */
    {NULL, 0, 0, NULL, NULL},                          /* tls_key */
    {"true", 0, 0, NULL, NULL},                        /* tls_verify */
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};

_Static_assert(sizeof(rmq_options) / sizeof(*rmq_options) == sizeof(rmq_specs) / sizeof(*rmq_specs),
               "rmq_specs is parallel to rmq_options");

/* The declared default of an option, as written in a config; NULL: none. */
static const char *rmq_default(const char *name)
{
    for (size_t i = 0; rmq_options[i].name; i++)
        if (strcmp(rmq_options[i].name, name) == 0)
            return rmq_specs[i].default_value;
    return NULL;
}

static const char *rmq_opt_str(const obx_host *host, const char *name)
{
    const char *v = NULL;
    return host->get_string(host->host_ctx, name, &v) && v ? v : rmq_default(name);
}

static int rmq_opt_int(const obx_host *host, const char *name)
{
    int64_t v;
    if (host->get_int(host->host_ctx, name, &v))
        return (int)v;
    const char *d = rmq_default(name);
    return d ? atoi(d) : 0;
}

static int rmq_opt_bool(const obx_host *host, const char *name)
{
    int v;
    if (host->get_bool(host->host_ctx, name, &v))
        return v;
    const char *d = rmq_default(name);
    return d && strcmp(d, "true") == 0;
}

static char *rmq_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void rmq_free_options(obx_instance *inst)
{
    free(inst->host_name);
    free(inst->user);
    if (inst->password) /* do not leave the secret in freed memory */
        memset(inst->password, 0, strlen(inst->password));
    free(inst->password);
    free(inst->vhost);
    free(inst->tls_ca);
    free(inst->tls_cert);
    free(inst->tls_key);
}

/* url, and the credentials and vhost that override it. */
static int rmq_read_url(obx_instance *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = rmq_opt_str(host, "url");
    if (!url) {
        snprintf(errstr, errstr_size, "option url is required");
        return -1;
    }
    if (strncmp(url, "amqp://", 7) != 0 && strncmp(url, "amqps://", 8) != 0) {
        snprintf(errstr, errstr_size, "option url must start with amqp:// or amqps://");
        return -1;
    }
    char *copy = strdup(url);
    if (!copy) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    int rc = amqp_parse_url(copy, &info);
    if (rc != AMQP_STATUS_OK) {
        memset(copy, 0, strlen(copy));
        free(copy);
        snprintf(errstr, errstr_size, "option url is malformed (%s)", amqp_error_string2(rc));
        return -1;
    }
    const char *user = rmq_opt_str(host, "username");
    const char *password = rmq_opt_str(host, "password");
    const char *vhost = rmq_opt_str(host, "vhost");
    inst->host_name = strdup(info.host);
    inst->port = info.port;
    inst->ssl = info.ssl;
    inst->user = strdup(user ? user : info.user);
    inst->password = strdup(password ? password : info.password);
    inst->vhost = strdup(vhost ? vhost : info.vhost && *info.vhost ? info.vhost : "/");
    memset(copy, 0, strlen(url));
    free(copy);
    return 0;
}

/* Reads the options; the host has checked types, ranges and choices. Returns
 * 0, or -1 with errstr (no secret in it) for what spans several options. */
int rmq_read_options(obx_instance *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    if (rmq_read_url(inst, errstr, errstr_size) != 0)
        return -1;

    inst->heartbeat_ms = rmq_opt_int(host, "heartbeat_ms");
    int64_t old_s;
    if (host->get_int(host->host_ctx, "heartbeat_s", &old_s)) /* deprecated, in seconds */
        inst->heartbeat_ms = (int)old_s * 1000;
    inst->connect_timeout_ms = rmq_opt_int(host, "connect_timeout_ms");
    inst->write_timeout_ms = rmq_opt_int(host, "write_timeout_ms");
    inst->mandatory = rmq_opt_bool(host, "mandatory");
    inst->persistent = rmq_opt_bool(host, "persistent");
    inst->check_exchanges = rmq_opt_bool(host, "check_exchanges");
    inst->unroutable =
        strcmp(rmq_opt_str(host, "unroutable"), "retriable") == 0 ? OBX_RETRIABLE : OBX_PERMANENT;
    inst->content_type_default = rmq_opt_str(host, "content_type_default");
    obx_ce_config_read(host, &inst->ce);
    for (int i = 0; i < RMQ_P_COUNT; i++)
        inst->props.tpl[i] = rmq_opt_str(host, rmq_prop_options[i]);
    if (rmq_props_check(inst, errstr, errstr_size) != 0)
        return -1;
    inst->declare_exchange = rmq_opt_str(host, "declare_exchange");
    inst->declare_exchange_type = rmq_opt_str(host, "declare_exchange_type");
    inst->declare_queue = rmq_opt_str(host, "declare_queue");
    inst->bind_routing_key = rmq_opt_str(host, "bind_routing_key");
    if (inst->bind_routing_key && !(inst->declare_queue && inst->declare_exchange)) {
        snprintf(errstr, errstr_size, "bind_routing_key needs declare_queue and declare_exchange");
        return -1;
    }
    inst->tls_ca = rmq_dup(rmq_opt_str(host, "tls_ca"));
    inst->tls_cert = rmq_dup(rmq_opt_str(host, "tls_cert"));
    inst->tls_key = rmq_dup(rmq_opt_str(host, "tls_key"));
    inst->tls_verify = rmq_opt_bool(host, "tls_verify");
    if (!inst->ssl && (inst->tls_ca || inst->tls_cert || inst->tls_key)) {
        snprintf(errstr, errstr_size, "tls_* options need an amqps:// url");
        return -1;
    }
    if (!inst->tls_cert != !inst->tls_key) {
        snprintf(errstr, errstr_size, "tls_cert and tls_key go together");
        return -1;
    }
    return 0;
}
