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

/*
 * The options your driver accepts. The host rejects unknown names and wrong
 * types before create, so create only checks values. Mark credentials
 * OBX_OPT_SECRET: the host never prints them.
 */
static const obx_option tpl_options[] = {
    {"url", OBX_OPT_STRING, 0, "where the broker is (unused by the template)"},
    {"fail_create", OBX_OPT_BOOL, 0, "refuse to create, to show how errors are reported"},
    {NULL, 0, 0, NULL},
};

/*
 * One instance per relay worker and output. Keep ALL state here: several
 * instances run at once in one process, so no mutable globals.
 */
struct obx_instance {
    const obx_host *host; /* valid until destroy returns */
    int closed;
    /* BROKER: your client handle, in-flight bookkeeping, ... */
};

/*
 * create: read options, check them, connect (or connect lazily). On failure
 * return NULL and write one line to errstr; never print, never exit.
 */
static obx_instance *tpl_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    const char *url = "nowhere://";
    int fail_create = 0;
    host->get_string(host->host_ctx, "url", &url); /* returns 0 and leaves url when unset */
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
    host->log(host->host_ctx, OBX_LOG_DEBUG, "template instance for %s", url);
    return inst;
}

/*
 * publish_batch: hand every message to the broker WITHOUT waiting for
 * acknowledgements, and write accept[i] for each: OBX_OK promises exactly
 * one completion later; any other status refuses the message now (no
 * completion). Message memory dies when this returns: copy what you keep.
 *
 * BROKER: a real driver sends here, remembers msgs[i].token with the
 * broker's sequence number, and calls host->complete when the broker's
 * durable acknowledgement arrives (from poll or its own thread).
 */
static obx_status tpl_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                    obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        accept[i] = OBX_OK;
        /* the /dev/null broker "acknowledges" immediately */
        inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
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
};

/* The one exported symbol (build with -fvisibility=hidden). */
OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &tpl_def;
}
