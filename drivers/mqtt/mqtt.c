/*
 * MQTT 5 driver: instance life cycle (create, flush, close, destroy).
 * Options are read in mqtt_conf.c, the connection and timeouts are managed
 * in mqtt_conn.c, publishing and acknowledgements are in mqtt_publish.c,
 * completions in mqtt_complete.c, one paho client per connection in
 * mqtt_client.c; what the mosquitto driver does alike (options both take,
 * whose fault an answer is, the message checks) is in drivers/mqtt_common. Each file's header
 * declares what it defines; they depend one way: mqtt -> mqtt_conf ->
 * mqtt_conn -> mqtt_client, mqtt_publish -> mqtt_item, mqtt_complete ->
 * mqtt_int.h (the types).
 *
 * Offline buffering is off on purpose: the outbox row is the buffer. While
 * disconnected, publishes are refused UNAVAILABLE and the host retries the
 * row later; a lost connection completes everything in flight or queued
 * UNAVAILABLE. (A 1.0 host, which has no refuse service, knows no
 * UNAVAILABLE: it gets RETRIABLE instead.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mqc_clock.h"
#include "mqc_host.h"
#include "mqtt_client.h"
#include "mqtt_complete.h"
#include "mqtt_conf.h"
#include "mqtt_conn.h"
#include "mqtt_publish.h"

/* ------------------------------------------------------------ create */

static void mqtt_free(mqtt_inst *inst)
{
    mqtt_client_destroy_all(inst);
    free(inst->pctx);
    mqc_sync_destroy(&inst->mu, &inst->cond, &inst->idle);
    free(inst->slots);
    free(inst->free_idx);
    while (inst->queue_head) { /* close completed them; only a failed create gets here first */
        mqtt_item *it = inst->queue_head;
        inst->queue_head = it->next;
        free(it);
    }
    free(inst);
}

static void mqtt_close(mqtt_inst *inst);

static mqtt_inst *mqtt_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    mqtt_inst *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->has_refuse = OBX_HOST_HAS(host, refuse);
    inst->unavailable = inst->has_refuse ? OBX_UNAVAILABLE : OBX_RETRIABLE;
    mqc_sync_init(&inst->mu, &inst->cond, &inst->idle);

    if (mqtt_read_options(inst, errstr, errstr_size))
        goto fail;
    inst->slots = calloc((size_t)inst->window, sizeof *inst->slots);
    inst->free_idx = calloc((size_t)inst->window, sizeof *inst->free_idx);
    inst->pctx = calloc(2 * (size_t)inst->window, sizeof *inst->pctx);
    inst->send_limit = inst->window;
    if (!inst->slots || !inst->free_idx || !inst->pctx) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    for (int i = inst->window - 1; i >= 0; i--) {
        inst->slots[i].inst = inst;
        inst->free_idx[inst->free_n++] = i;
        inst->pctx[i] = (mqtt_pctx){&inst->slots[i], 0};
        inst->pctx[inst->window + i] = (mqtt_pctx){&inst->slots[i], 1};
    }

    inst->on_lost = mqtt_on_connection_lost;
    inst->on_disconnected = mqtt_on_disconnected;
    int rc = mqtt_client_make(inst, 0, &inst->client);
    if (rc != MQTTASYNC_SUCCESS) {
        snprintf(errstr, errstr_size, "cannot create MQTT client for %s: %s", inst->url_shown,
                 MQTTAsync_strerror(rc));
        goto fail;
    }

    inst->backoff_ms = inst->reconnect_min_ms;
    inst->next_connect_ms = 0;
    if ((rc = pthread_create(&inst->timer, NULL, mqtt_timer_main, inst)) != 0) {
        snprintf(errstr, errstr_size, "cannot start timer thread: %s", strerror(rc));
        goto fail;
    }
    inst->timer_started = 1;

    if (mqc_first_connect_refused(&inst->mu, &inst->cond, &inst->connected, inst->last_connect_err,
                                  &inst->last_connect_code, inst->url_shown, errstr, errstr_size)) {
        mqtt_close(inst);
        mqtt_free(inst);
        return NULL;
    }
    return inst;

fail:
    mqtt_free(inst);
    return NULL;
}

/* ------------------------------------------------------------ flush, close */

static size_t mqtt_flush(mqtt_inst *inst, int timeout_ms)
{
    struct timespec ts;
    mqc_abstime(timeout_ms > 0 ? timeout_ms : 0, &ts);
    pthread_mutex_lock(&inst->mu);
    while (inst->inflight + inst->queued > 0 && timeout_ms > 0)
        if (pthread_cond_timedwait(&inst->idle, &inst->mu, &ts) == ETIMEDOUT)
            break;
    size_t left = (size_t)inst->inflight + inst->queued;
    pthread_mutex_unlock(&inst->mu);
    return left;
}

static void mqtt_on_disconnect_done(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_inst *inst = ctx;
    (void)resp;
    pthread_mutex_lock(&inst->mu);
    inst->disconnect_done = 1;
    pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_on_disconnect_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    (void)resp;
    mqtt_on_disconnect_done(ctx, NULL);
}

static void mqtt_close(mqtt_inst *inst)
{
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        pthread_mutex_unlock(&inst->mu);
        return;
    }
    /* from here on every paho callback is a no-op for completions */
    inst->closed = 1;
    inst->stopping = 1;
    /* a pump in another thread (paho's, after an acknowledgement) finishes
     * the send it is in, completing it "aborted" itself, and stops */
    while (inst->pumping)
        pthread_cond_wait(&inst->cond, &inst->mu);
    int n = mqtt_fail_all_locked(inst, OBX_RETRIABLE, "aborted: driver closed");
    int connected = inst->connected;
    pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);

    if (inst->timer_started) {
        pthread_join(inst->timer, NULL);
        inst->timer_started = 0;
    }
    if (connected && inst->client) {
        MQTTAsync_disconnectOptions dopts = MQTTAsync_disconnectOptions_initializer5;
        dopts.timeout = 1000;
        dopts.onSuccess5 = mqtt_on_disconnect_done;
        dopts.onFailure5 = mqtt_on_disconnect_fail;
        dopts.context = inst;
        if (MQTTAsync_disconnect(inst->client, &dopts) == MQTTASYNC_SUCCESS) {
            struct timespec ts;
            mqc_abstime(1500, &ts);
            pthread_mutex_lock(&inst->mu);
            while (!inst->disconnect_done)
                if (pthread_cond_timedwait(&inst->cond, &inst->mu, &ts) == ETIMEDOUT)
                    break;
            pthread_mutex_unlock(&inst->mu);
        }
    }
    /* Destroying the clients here guarantees no paho callback runs after close. */
    mqtt_client_destroy_all(inst);
    if (inst->ever_connected || n)
        inst->host->log(
            inst->host->host_ctx, OBX_LOG_INFO,
            "closed %s: %llu acknowledged (%llu with no matching subscribers), %llu failed, "
            "%llu timed out, %llu lost with the connection, %d aborted; %llu batches, "
            "%llu messages queued for room (deepest %zu), window full %llu times, "
            "window waits %llu, connection waits %llu, out of order %llu, in flight limit %d, "
            "fresh clients %llu, nudges %llu",
            inst->client_id, (unsigned long long)inst->n_ok,
            (unsigned long long)inst->n_no_subscribers, (unsigned long long)inst->n_failed,
            (unsigned long long)inst->n_timeout, (unsigned long long)inst->n_lost, n,
            (unsigned long long)inst->n_batches, (unsigned long long)inst->n_queued,
            inst->queue_max, (unsigned long long)inst->n_window_full,
            (unsigned long long)inst->n_window_waits, (unsigned long long)inst->n_conn_waits,
            (unsigned long long)inst->n_out_of_order, inst->send_limit,
            (unsigned long long)inst->n_clients, (unsigned long long)inst->n_nudges);
}

static void mqtt_destroy(mqtt_inst *inst)
{
    if (!inst)
        return;
    mqtt_close(inst);
    mqtt_free(inst);
}

static const obx_driver_def mqtt_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "mqtt",
    .version = "0.2.0",
    .description = "MQTT 5 (paho-mqtt-c async): QoS 1/2, PUBACK reason codes, user properties",
    .options = mqtt_options,
    .option_specs = mqtt_option_specs,
    /* One connection per client (mqtt_client.c): what a lost connection
     * gave back is never sent again by paho, so one connection keeps the
     * order of an aggregate's run, and the later events of an aggregate in
     * flight after an earlier one failed fail too (mqtt_complete.c). */
    .flags = OBX_DRIVER_IN_ORDER,
    .probe = mqtt_probe,
    .create = mqtt_create,
    .publish_batch = mqtt_publish_batch,
    .poll = NULL, /* completions come from paho's and the timer thread */
    .flush = mqtt_flush,
    .close = mqtt_close,
    .destroy = mqtt_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &mqtt_def;
}
