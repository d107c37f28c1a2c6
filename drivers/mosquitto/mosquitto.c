/*
 * MQTT 5 driver on libmosquitto: instance life cycle (create, flush, close,
 * destroy) and the definition. Options are read in mosq_conf.c (the url in
 * mosq_url.c), the client and its callbacks are in mosq_client.c, the loop
 * thread in mosq_loop.c, publishing in mosq_publish.c (messages checked and
 * given their properties in mosq_props.c), the publishes in flight and their
 * completions in mosq_track.c. What the mqtt driver does alike (options both
 * take, whose fault an answer is, the message checks) is in drivers/mqtt_common.
 *
 * One libmosquitto client and one loop thread per instance, where the mqtt
 * driver's paho shares one send and one receive thread among every client
 * of the process. As there: no offline buffering (the outbox row is the
 * buffer): while disconnected, publishes are refused UNAVAILABLE, and a lost
 * connection completes everything in flight UNAVAILABLE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosq_conf.h"
#include "mosq_loop.h"
#include "mosq_publish.h"
#include "mosq_track.h"
#include "mqc_host.h"

static void mosq_close(mosq_inst *inst);

static void mosq_free(mosq_inst *inst)
{
    mosq_track_free(&inst->track);
    mqc_sync_destroy(&inst->mu, &inst->cond, &inst->idle);
    free(inst);
}

static mosq_inst *mosq_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    mosq_inst *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->has_refuse = OBX_HOST_HAS(host, refuse);
    inst->unavailable = inst->has_refuse ? OBX_UNAVAILABLE : OBX_RETRIABLE;
    mqc_sync_init(&inst->mu, &inst->cond, &inst->idle);
    if (mosq_read_options(inst, errstr, errstr_size) < 0)
        goto fail;
    mosq_lib_init();
    /* a client made here checks the options libmosquitto checks (TLS files) */
    struct mosquitto *probe = mosq_client_new(inst, errstr, errstr_size);
    if (!probe)
        goto fail;
    mosquitto_destroy(probe);
    inst->backoff_ms = inst->reconnect_min_ms;
    int rc = pthread_create(&inst->loop, NULL, mosq_loop_main, inst);
    if (rc != 0) {
        snprintf(errstr, errstr_size, "cannot start the loop thread: %s", strerror(rc));
        goto fail;
    }
    inst->loop_started = 1;

    if (mqc_first_connect_refused(&inst->mu, &inst->cond, &inst->connected, inst->last_connect_err,
                                  &inst->last_connect_code, inst->url_shown, errstr, errstr_size)) {
        mosq_close(inst);
        goto fail;
    }
    return inst;
fail:
    mosq_free(inst);
    return NULL;
}

static size_t mosq_flush(mosq_inst *inst, int timeout_ms)
{
    struct timespec ts;
    mqc_abstime(timeout_ms > 0 ? timeout_ms : 0, &ts);
    pthread_mutex_lock(&inst->mu);
    while (inst->track.live > 0 && timeout_ms > 0)
        if (pthread_cond_timedwait(&inst->idle, &inst->mu, &ts) == ETIMEDOUT)
            break;
    size_t left = inst->track.live;
    pthread_mutex_unlock(&inst->mu);
    return left;
}

static void mosq_close(mosq_inst *inst)
{
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        pthread_mutex_unlock(&inst->mu);
        return;
    }
    /* from here on every callback completes nothing */
    inst->closed = 1;
    inst->stopping = 1;
    int n = mosq_track_fail_all(inst, OBX_RETRIABLE, "aborted: driver closed");
    pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);
    if (inst->loop_started) {
        pthread_join(inst->loop, NULL); /* it disconnects and destroys the client */
        inst->loop_started = 0;
    }
    if (inst->ever_connected || n)
        inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                        "closed %s: %llu acknowledged (%llu with no matching subscribers), "
                        "%llu failed, %llu timed out, %llu lost with the connection, %d aborted; "
                        "%llu batches, %llu clients",
                        inst->client_id, (unsigned long long)inst->n_ok,
                        (unsigned long long)inst->n_no_subscribers,
                        (unsigned long long)inst->n_failed, (unsigned long long)inst->n_timeout,
                        (unsigned long long)inst->n_lost, n, (unsigned long long)inst->n_batches,
                        (unsigned long long)inst->n_clients);
}

static void mosq_destroy(mosq_inst *inst)
{
    if (!inst)
        return;
    mosq_close(inst);
    mosq_free(inst);
}

static const obx_driver_def mosq_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "mosquitto",
    .version = "0.1.0",
    .description = "MQTT 5 (libmosquitto): QoS 1/2, PUBACK reason codes, user properties, "
                   "a network thread per output instance",
    .options = mosq_options,
    .option_specs = mosq_option_specs,
    /* one connection per client, a fresh client after a lost connection
     * (nothing given back is sent again), and the later events of an
     * aggregate in flight after an earlier one failed fail too (mosq_track.c) */
    .flags = OBX_DRIVER_IN_ORDER,
    .probe = mosq_probe,
    .create = mosq_create,
    .publish_batch = mosq_publish_batch,
    .poll = NULL, /* completions come from the loop thread */
    .flush = mosq_flush,
    .close = mosq_close,
    .destroy = mosq_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &mosq_def;
}
