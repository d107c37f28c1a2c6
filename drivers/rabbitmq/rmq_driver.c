/*
 * RabbitMQ driver: definition, options and instance lifecycle.
 *
 * One connection and one channel in confirm mode per instance. Publishes are
 * pipelined; basic.ack / basic.nack frames complete them by delivery tag
 * (rmq_publish.c). A lost connection completes every unconfirmed message
 * RETRIABLE and the instance reconnects by itself, with backoff, on the next
 * publish or poll (rmq_conn.c): the host never has to re-create it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmq.h"

static const obx_option rmq_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,
     "amqp://[user:password@]host[:port][/vhost] or amqps://..."},
    {"username", OBX_OPT_STRING, 0, "user name (overrides the URL's)"},
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (overrides the URL's)"},
    {"vhost", OBX_OPT_STRING, 0, "virtual host (overrides the URL's; default /)"},
    {"heartbeat_s", OBX_OPT_INT, 0,
     "AMQP heartbeat in seconds (default 30); it also bounds a publish to a stalled broker, 0 = "
     "off"},
    {"connect_timeout_ms", OBX_OPT_INT, 0, "connect, login and RPC timeout (default 5000)"},
    {"mandatory", OBX_OPT_BOOL, 0, "publish mandatory: unroutable messages fail (default true)"},
    {"unroutable", OBX_OPT_STRING, 0,
     "status of an unroutable message: permanent (default) | retriable"},
    {"persistent", OBX_OPT_BOOL, 0, "delivery_mode 2 (default true)"},
    {"content_type_default", OBX_OPT_STRING, 0, "content_type when the message has none"},
    {"check_exchanges", OBX_OPT_BOOL, 0,
     "check once that a destination exchange exists before publishing to it (default true)"},
    {"declare_exchange", OBX_OPT_STRING, 0, "durable exchange to declare on connect"},
    {"declare_exchange_type", OBX_OPT_STRING, 0,
     "its type: direct | topic (default) | fanout | headers"},
    {"declare_queue", OBX_OPT_STRING, 0, "durable queue to declare on connect"},
    {"bind_routing_key", OBX_OPT_STRING, 0, "bind declare_queue to declare_exchange with this key"},
    {"tls_ca", OBX_OPT_STRING, 0, "amqps: CA certificate file (PEM)"},
    {"tls_cert", OBX_OPT_STRING, 0, "amqps: client certificate file (PEM)"},
    {"tls_key", OBX_OPT_STRING, 0, "amqps: client key file (PEM)"},
    {"tls_verify", OBX_OPT_BOOL, 0,
     "amqps: verify the broker's certificate and name (default true)"},
    {NULL, 0, 0, NULL},
};

int64_t rmq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *rmq_opt_str(const obx_host *host, const char *name, const char *dflt)
{
    const char *v = NULL;
    return host->get_string(host->host_ctx, name, &v) && v ? v : dflt;
}

static int rmq_opt_int(const obx_host *host, const char *name, int dflt)
{
    int64_t v;
    return host->get_int(host->host_ctx, name, &v) ? (int)v : dflt;
}

static int rmq_opt_bool(const obx_host *host, const char *name, int dflt)
{
    int v;
    return host->get_bool(host->host_ctx, name, &v) ? v : dflt;
}

static char *rmq_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void rmq_free_options(obx_instance *inst)
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

/* Reads and checks the options. Returns 0, or -1 with errstr (no secret in it). */
static int rmq_read_options(obx_instance *inst, char *errstr, size_t errstr_size)
{
    const obx_host *host = inst->host;
    const char *url = rmq_opt_str(host, "url", NULL);
    if (!url) {
        snprintf(errstr, errstr_size, "option url is required");
        return -1;
    }
    if (strncmp(url, "amqp://", 7) != 0 && strncmp(url, "amqps://", 8) != 0) {
        snprintf(errstr, errstr_size, "option url must start with amqp:// or amqps://");
        return -1;
    }
    char *copy = strdup(url);
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    int rc = amqp_parse_url(copy, &info);
    if (rc != AMQP_STATUS_OK) {
        memset(copy, 0, strlen(copy));
        free(copy);
        snprintf(errstr, errstr_size, "option url is malformed (%s)", amqp_error_string2(rc));
        return -1;
    }
    inst->host_name = strdup(info.host);
    inst->port = info.port;
    inst->ssl = info.ssl;
    inst->user = strdup(rmq_opt_str(host, "username", info.user));
    inst->password = strdup(rmq_opt_str(host, "password", info.password));
    inst->vhost = strdup(rmq_opt_str(host, "vhost", info.vhost && *info.vhost ? info.vhost : "/"));
    memset(copy, 0, strlen(url));
    free(copy);

    inst->heartbeat_s = rmq_opt_int(host, "heartbeat_s", 30);
    inst->connect_timeout_ms = rmq_opt_int(host, "connect_timeout_ms", 5000);
    if (inst->heartbeat_s < 0 || inst->heartbeat_s > 65535 || inst->connect_timeout_ms <= 0) {
        snprintf(errstr, errstr_size, "heartbeat_s must be 0..65535 and connect_timeout_ms > 0");
        return -1;
    }
    inst->mandatory = rmq_opt_bool(host, "mandatory", 1);
    inst->persistent = rmq_opt_bool(host, "persistent", 1);
    inst->check_exchanges = rmq_opt_bool(host, "check_exchanges", 1);
    const char *unroutable = rmq_opt_str(host, "unroutable", "permanent");
    if (strcmp(unroutable, "permanent") == 0) {
        inst->unroutable = OBX_PERMANENT;
    } else if (strcmp(unroutable, "retriable") == 0) {
        inst->unroutable = OBX_RETRIABLE;
    } else {
        snprintf(errstr, errstr_size,
                 "option unroutable must be \"permanent\" or \"retriable\", not \"%s\"",
                 unroutable);
        return -1;
    }
    inst->content_type_default = rmq_opt_str(host, "content_type_default", NULL);
    inst->declare_exchange = rmq_opt_str(host, "declare_exchange", NULL);
    inst->declare_exchange_type = rmq_opt_str(host, "declare_exchange_type", "topic");
    inst->declare_queue = rmq_opt_str(host, "declare_queue", NULL);
    inst->bind_routing_key = rmq_opt_str(host, "bind_routing_key", NULL);
    if (inst->bind_routing_key && !(inst->declare_queue && inst->declare_exchange)) {
        snprintf(errstr, errstr_size, "bind_routing_key needs declare_queue and declare_exchange");
        return -1;
    }
    inst->tls_ca = rmq_dup(rmq_opt_str(host, "tls_ca", NULL));
    inst->tls_cert = rmq_dup(rmq_opt_str(host, "tls_cert", NULL));
    inst->tls_key = rmq_dup(rmq_opt_str(host, "tls_key", NULL));
    inst->tls_verify = rmq_opt_bool(host, "tls_verify", 1);
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

static void rmq_destroy(obx_instance *inst);

static obx_instance *rmq_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    obx_instance *inst = calloc(1, sizeof(*inst));
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->base_tag = inst->next_tag = 1;
    if (rmq_read_options(inst, errstr, errstr_size) != 0) {
        rmq_destroy(inst);
        return NULL;
    }
    /* Connect now so declarations exist before the first publish and a bad
     * broker address shows at start; a failure is not fatal: the instance
     * retries on publish and poll, completing messages RETRIABLE meanwhile. */
    if (rmq_connect(inst) != 0)
        host->log(host->host_ctx, OBX_LOG_WARN, "rabbitmq: %s (will retry)", inst->last_error);
    return inst;
}

static obx_status rmq_publish(obx_instance *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    if (inst->closed) {
        for (size_t i = 0; i < count; i++)
            accept[i] = OBX_RETRIABLE;
        return OBX_FATAL;
    }
    return rmq_publish_batch(inst, msgs, count, accept);
}

static void rmq_poll(obx_instance *inst, int timeout_ms)
{
    if (inst->closed)
        return;
    int64_t deadline = rmq_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!inst->conn) {
        /* Sleep until the next connection attempt is due (or the timeout). */
        int64_t wake = inst->next_connect_ms < deadline ? inst->next_connect_ms : deadline;
        int64_t ms = wake - rmq_now_ms();
        if (ms > 0) {
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
        if (rmq_ensure_connected(inst) != 0)
            return;
    }
    int64_t left = deadline - rmq_now_ms();
    rmq_pump(inst, left > 0 ? (int)left : 0);
}

static size_t rmq_flush(obx_instance *inst, int timeout_ms)
{
    int64_t deadline = rmq_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (inst->pending > 0 && inst->conn) {
        int64_t left = deadline - rmq_now_ms();
        if (rmq_pump(inst, left > 0 ? (int)left : 0) < 0 || left <= 0)
            break;
    }
    return inst->pending;
}

static void rmq_close(obx_instance *inst)
{
    if (inst->closed)
        return;
    if (inst->conn && inst->pending > 0)
        rmq_pump(inst, 0); /* take the confirms that already arrived */
    rmq_fail_pending(inst, OBX_RETRIABLE, "aborted");
    inst->closed = 1; /* before disconnect: no reconnect, no warning */
    if (inst->conn)
        rmq_disconnect(inst, "closed", 1);
}

static void rmq_destroy(obx_instance *inst)
{
    if (!inst)
        return;
    rmq_close(inst);
    rmq_free_options(inst);
    for (size_t i = 0; i < inst->exchange_count; i++)
        free(inst->exchanges[i].name);
    free(inst->exchanges);
    free(inst->ring);
    free(inst->hdr);
    free(inst);
}

static const obx_driver_def rmq_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "rabbitmq",
    .version = "0.1.0",
    .description = "RabbitMQ (AMQP 0-9-1) with publisher confirms and mandatory routing",
    .options = rmq_options,
    .create = rmq_create,
    .publish_batch = rmq_publish,
    .poll = rmq_poll,
    .flush = rmq_flush,
    .close = rmq_close,
    .destroy = rmq_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &rmq_def;
}
