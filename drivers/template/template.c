/*
 * template: a skeleton driver to copy. It "publishes" to nowhere and
 * acknowledges at once, like a /dev/null broker, so it passes
 * `outbox-relay check-driver` as is. Replace the parts marked BROKER with
 * your client library; keep the shape.
 *
 * Build in tree: drivers/<name>/CMakeLists.txt with obx_add_driver().
 * Build out of tree: see CMakeLists.txt here, or simply
 *   cc -shared -fPIC $(pkg-config --cflags outbox-relay-driver) template.c -o template.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obx/driver.h>
#include <obx/envelope.h>

/*
 * The options your driver accepts. The host rejects unknown names and wrong
 * types before create. Mark credentials OBX_OPT_SECRET: the host never
 * prints them. Durations are integers in milliseconds named *_ms.
 */
static const obx_option tpl_options[] = {
    {"url", OBX_OPT_STRING, 0, "where the broker is (unused by the template)"},
    {"max_message_bytes", OBX_OPT_INT, 0,
     "a larger message is refused, permanent, with a reason (shows host->refuse)"},
    {"compression", OBX_OPT_STRING, 0, "passed to the client library (unused by the template)"},
    {"connect_timeout_ms", OBX_OPT_INT, 0, "how long a connection attempt may take"},
    {"connect_timeout_s", OBX_OPT_INT, OBX_OPT_DEPRECATED,
     "deprecated: use connect_timeout_ms (this one is in seconds)"},
    {"fail_create", OBX_OPT_BOOL, 0, "refuse to create, to show how errors are reported"},
    {NULL, 0, 0, NULL},
};

/*
 * ABI 1.1: what the host enforces, index by index with tpl_options. The host
 * refuses a value out of range or not among the choices (with the config's
 * file and line) and hands the default to the getters, so create reads
 * checked values and keeps no defaults of its own. renamed_from keeps an old
 * name working (with a warning); where the unit changed, keep the old option
 * declared OBX_OPT_DEPRECATED and convert it, as connect_timeout_s here.
 */
static const char *const tpl_compressions[] = {"none", "gzip", "lz4", NULL};
static const obx_option_spec tpl_specs[] = {
    {.default_value = "nowhere://"},
    {.default_value = "1048576", .min = 1, .max = 1073741824},
    {.default_value = "none", .choices = tpl_compressions},
    {.default_value = "5000", .min = 1, .max = 600000, .renamed_from = "connect_timeout"},
    {.min = 1, .max = 600},
    {.default_value = "false"},
};

/*
 * One instance per relay worker and output. Keep ALL state here: several
 * instances run at once in one process, so no mutable globals.
 */
struct obx_instance {
    const obx_host *host; /* valid until destroy returns */
    int64_t max_message_bytes;
    int closed;
    /* BROKER: your client handle, in-flight bookkeeping, ... */
};

/*
 * create: read options, check them, connect (or connect lazily). On failure
 * return NULL and write one line to errstr; never print, never exit.
 */
static obx_instance *tpl_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    /* A 1.1 host hands out the declared defaults; the initial values here
     * only matter under a 1.0 host, whose getters return 0 when unset. */
    const char *url = "nowhere://", *compression = "none";
    int64_t max_message_bytes = 1048576, connect_timeout_ms = 5000, connect_timeout_s;
    int fail_create = 0;
    host->get_string(host->host_ctx, "url", &url);
    host->get_int(host->host_ctx, "max_message_bytes", &max_message_bytes);
    host->get_string(host->host_ctx, "compression", &compression);
    host->get_int(host->host_ctx, "connect_timeout_ms", &connect_timeout_ms);
    if (host->get_int(host->host_ctx, "connect_timeout_s", &connect_timeout_s))
        connect_timeout_ms = connect_timeout_s * 1000; /* the deprecated option, converted */
    host->get_bool(host->host_ctx, "fail_create", &fail_create);
    if (fail_create) {
        snprintf(errstr, errstr_size, "fail_create is set: refusing to create");
        return NULL;
    }
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->max_message_bytes = max_message_bytes;
    /* BROKER: create the client with url, compression and connect_timeout_ms */
    host->log(host->host_ctx, OBX_LOG_DEBUG,
              "instance for %s: max_message_bytes %lld, compression %s, connect_timeout_ms %lld",
              url, (long long)max_message_bytes, compression, (long long)connect_timeout_ms);
    return inst;
}

/*
 * publish_batch: hand every message to the broker WITHOUT waiting for
 * acknowledgements, and write accept[i] for each: OBX_OK promises exactly
 * one completion later; any other status refuses the message now (no
 * completion). Refuse with RETRIABLE or PERMANENT for a reason of this
 * message (it counts an attempt) and say why with host->refuse; refuse with
 * OBX_UNAVAILABLE when the broker cannot be reached (it counts nothing).
 * Message memory dies when this returns: copy what you keep.
 *
 * BROKER: a real driver sends here, remembers msgs[i].token with the
 * broker's sequence number, and calls host->complete when the broker's
 * durable acknowledgement arrives (from poll or its own thread).
 */
static obx_status tpl_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                    obx_status *accept)
{
    const obx_host *host = inst->host;
    for (size_t i = 0; i < count; i++) {
        if ((int64_t)msgs[i].payload_len > inst->max_message_bytes) {
            accept[i] = OBX_PERMANENT;
            if (OBX_HOST_HAS(host, refuse)) /* a 1.0 host has no refuse */
                host->refuse(host->host_ctx, msgs[i].token, 0,
                             "payload larger than max_message_bytes");
            continue;
        }
        /* BROKER: the standard fields as the broker's headers, named as the
         * relay's other drivers name them (obx/envelope.h) */
        obx_envelope env;
        obx_envelope_fill_host(&env, host, &msgs[i], OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
        for (size_t f = 0; f < env.count; f++)
            host->log(host->host_ctx, OBX_LOG_DEBUG, "header %s: %s", env.field[f].name,
                      env.field[f].value);
        accept[i] = OBX_OK;
        /* the /dev/null broker "acknowledges" immediately */
        host->complete(host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
    }
    return OBX_OK;
}

/*
 * poll: serve the client's events (acks, reconnects) for up to timeout_ms.
 * Optional: leave it NULL when completions come from your own threads.
 */
static void tpl_poll(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms; /* BROKER: e.g. rd_kafka_poll(rk, timeout_ms) */
}

/* flush: wait up to timeout_ms for in-flight messages; return how many remain. */
static size_t tpl_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0; /* nothing is ever in flight here */
}

/*
 * close: complete every in-flight message (OBX_RETRIABLE, "aborted", unless
 * the broker already acknowledged it), then disconnect. No completion may
 * follow once close returns; a second call does nothing.
 */
static void tpl_close(obx_instance *inst)
{
    if (inst->closed)
        return;
    inst->closed = 1;
    /* BROKER: stop your threads, complete what is left, disconnect */
}

/*
 * probe (optional, ABI 1.1): while the output is paused after an
 * OBX_UNAVAILABLE, the host calls this instead of sending messages. Try to
 * reach the broker for up to timeout_ms; OBX_OK once it can take messages.
 */
static obx_status tpl_probe(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms; /* BROKER: e.g. a metadata request or a connection attempt */
    return OBX_OK;
}

/* destroy: close if needed, then free everything. */
static void tpl_destroy(obx_instance *inst)
{
    tpl_close(inst);
    free(inst);
}

static const obx_driver_def tpl_def = {
    OBX_DRIVER_DEF_HEAD, /* magic, ABI version, struct size: lets the host check us */
    .name = "template",
    .version = "0.1.0",
    .description = "skeleton driver: acknowledges everything at once (a /dev/null broker)",
    .options = tpl_options,
    .create = tpl_create,
    .publish_batch = tpl_publish_batch,
    .poll = tpl_poll,
    .flush = tpl_flush,
    .close = tpl_close,
    .destroy = tpl_destroy,
    /* ABI 1.1. flags: OBX_DRIVER_IN_ORDER only when your broker keeps order
     * within an instance and stops at the first failure (see driver.h). */
    .flags = 0,
    .option_specs = tpl_specs,
    .probe = tpl_probe,
};

/* The one exported symbol (build with -fvisibility=hidden). */
OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &tpl_def;
}
