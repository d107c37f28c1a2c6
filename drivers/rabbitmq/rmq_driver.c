/*
 * RabbitMQ driver: definition and instance lifecycle.
 *
 * One connection and one channel in confirm mode per instance. Publishes are
 * pipelined; basic.ack / basic.nack frames complete them by delivery tag
 * (rmq_publish.c). A lost connection completes every unconfirmed message
 * UNAVAILABLE and the instance reconnects by itself, with backoff, on the next
 * publish, poll or probe (rmq_conn.c): the host never has to re-create it.
 * Options are in rmq_options.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmq_confirm.h"
#include "rmq_conn.h"
#include "rmq_options.h"
#include "rmq_publish.h"

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
     * retries on publish, poll and probe, refusing messages UNAVAILABLE meanwhile. */
    if (rmq_connect(inst) != 0)
        host->log(host->host_ctx, OBX_LOG_WARN, "%s (will retry)", inst->last_error);
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

/* Reachable within timeout_ms? Connects now if needed, ignoring the backoff:
 * the host paces its probes itself. */
static obx_status rmq_probe(obx_instance *inst, int timeout_ms)
{
    if (inst->closed)
        return OBX_UNAVAILABLE;
    if (inst->conn)
        rmq_pump(inst, 0); /* notices a connection the broker dropped */
    if (!inst->conn) {
        int configured = inst->connect_timeout_ms;
        if (timeout_ms > 0 && timeout_ms < configured)
            inst->connect_timeout_ms = timeout_ms;
        int rc = rmq_connect(inst);
        inst->connect_timeout_ms = configured;
        if (rc != 0)
            return OBX_UNAVAILABLE;
    }
    return inst->blocked ? OBX_UNAVAILABLE : OBX_OK;
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
    obx_ce_event_free(&inst->ce_event);
    obx_held_free(&inst->held);
    obx_held_free(&inst->held_out);
    free(inst);
}

static const obx_driver_def rmq_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "rabbitmq",
    .version = "0.2.0",
    .description = "RabbitMQ (AMQP 0-9-1) with publisher confirms and mandatory routing",
    .options = rmq_options,
    .create = rmq_create,
    .publish_batch = rmq_publish,
    .poll = rmq_poll,
    .flush = rmq_flush,
    .close = rmq_close,
    .destroy = rmq_destroy,
    /* one channel delivers in order, and a failed message fails the later
     * in-flight ones of its aggregate (rmq_publish.c) */
    .flags = OBX_DRIVER_IN_ORDER,
    .option_specs = rmq_specs,
    .probe = rmq_probe,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &rmq_def;
}
