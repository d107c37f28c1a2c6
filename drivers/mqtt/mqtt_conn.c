/*
 * MQTT driver: connection management and publish timeouts.
 *
 * The driver's timer thread (re)connects with exponential backoff, also
 * after a failed first attempt (paho's automatic reconnect only follows a
 * successful one), and completes publishes that were never acknowledged.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mqc_clock.h"
#include "mqc_host.h"
#include "mqc_verdict.h"
#include "mqtt_client.h"
#include "mqtt_complete.h"
#include "mqtt_conn.h"
#include "mqtt_publish.h"

#define MQTT_TIMER_TICK_MS 50
/* At most this many nudges unanswered (a hung broker gets no more). */
#define MQTT_NUDGES_MAX 4
#define MQTT_NUDGE_TOPIC "outbox-relay/nudge"

/* The limits the broker's CONNACK sets (mu held). */
static void mqtt_apply_connack_locked(mqtt_inst *inst, MQTTProperties *props)
{
    int limit = inst->window;
    if (props && MQTTProperties_hasProperty(props, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM)) {
        int rmax = MQTTProperties_getNumericValue(props, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM);
        if (rmax > 0 && rmax < limit) {
            limit = rmax;
            if (inst->send_limit != rmax)
                inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                                "broker takes at most %d unacknowledged publishes (Receive "
                                "Maximum): %d in flight instead of max_in_flight = %d, the rest "
                                "waits in the driver",
                                rmax, rmax, inst->window);
        }
    }
    inst->send_limit = limit;
    inst->max_packet = 0;
    if (props && MQTTProperties_hasProperty(props, MQTTPROPERTY_CODE_MAXIMUM_PACKET_SIZE))
        inst->max_packet =
            (unsigned)MQTTProperties_getNumericValue(props, MQTTPROPERTY_CODE_MAXIMUM_PACKET_SIZE);
}

void mqtt_on_connect_ok(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_inst *inst = ((mqtt_cctx *)ctx)->inst;
    pthread_mutex_lock(&inst->mu);
    if (!inst->closed && !mqtt_client_stale_locked(ctx)) {
        mqtt_apply_connack_locked(inst, resp ? &resp->properties : NULL);
        inst->connected = 1;
        inst->connecting = 0;
        inst->backoff_ms = inst->reconnect_min_ms;
        mqc_log_connected(inst->host, inst->url_shown, inst->client_id, inst->connect_attempts,
                          inst->ever_connected);
        inst->connect_attempts = 0;
        inst->ever_connected = 1;
        pthread_cond_broadcast(&inst->cond);
    }
    pthread_mutex_unlock(&inst->mu);
}

void mqtt_on_connect_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    mqtt_inst *inst = ((mqtt_cctx *)ctx)->inst;
    pthread_mutex_lock(&inst->mu);
    if (!inst->closed && !mqtt_client_stale_locked(ctx)) {
        inst->connecting = 0;
        /* paho 1.3.12 passes an MQTT 5 CONNACK refusal as code, reasonCode 0 */
        int reason = resp->reasonCode ? (int)resp->reasonCode : resp->code >= 0x80 ? resp->code : 0;
        inst->last_connect_code = reason ? reason : resp->code;
        if (reason)
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err, "CONNACK 0x%02x %s",
                     (unsigned)reason, MQTTReasonCode_toString((enum MQTTReasonCodes)reason));
        else
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err, "%s%s%s",
                     MQTTAsync_strerror(resp->code), resp->message ? ": " : "",
                     resp->message ? resp->message : "");
        /* first failure and then every 10th: a broker outage should not flood the log */
        if (inst->connect_attempts % 10 == 1)
            inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                            "connect to %s failed (attempt %d): %s; retrying in %lld ms",
                            inst->url_shown, inst->connect_attempts, inst->last_connect_err,
                            (long long)inst->backoff_ms);
        inst->next_connect_ms = mqc_now_ms() + inst->backoff_ms;
        inst->backoff_ms *= 2;
        if (inst->backoff_ms > inst->reconnect_max_ms)
            inst->backoff_ms = inst->reconnect_max_ms;
        pthread_cond_broadcast(&inst->cond);
    }
    pthread_mutex_unlock(&inst->mu);
}

/* The connection is gone: complete everything in flight UNAVAILABLE. Paho may
 * still call onFailure5 for those later; their slots are FREE by then (or
 * carry another paho token), so the late callback is ignored. */
static void mqtt_lost_locked(mqtt_inst *inst, const char *why)
{
    if (inst->closed)
        return;
    int was = inst->connected;
    inst->connected = 0;
    inst->fresh_needed = 1; /* this client may still send what is given back now */
    char detail[MQTT_DETAIL_MAX];
    snprintf(detail, sizeof detail, "%s before the acknowledgement", why);
    int n = mqtt_fail_all_locked(inst, inst->unavailable, detail);
    inst->nudges_out = 0; /* the lost client's answers are stale */
    inst->n_lost += (uint64_t)n;
    if (was || n)
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "%s (%s); %d publish(es) in flight or queued given back, reconnecting", why,
                        inst->url_shown, n);
    if (!inst->connecting && inst->next_connect_ms < mqc_now_ms() + inst->backoff_ms)
        inst->next_connect_ms = mqc_now_ms() + inst->backoff_ms;
    pthread_cond_broadcast(&inst->cond);
}

void mqtt_on_connection_lost(void *ctx, char *cause)
{
    mqtt_inst *inst = ((mqtt_cctx *)ctx)->inst;
    (void)cause; /* paho passes NULL or a static text; our own is clearer */
    pthread_mutex_lock(&inst->mu);
    if (!mqtt_client_stale_locked(ctx))
        mqtt_lost_locked(inst, "connection lost");
    pthread_mutex_unlock(&inst->mu);
}

void mqtt_on_disconnected(void *ctx, MQTTProperties *props, enum MQTTReasonCodes reason)
{
    mqtt_inst *inst = ((mqtt_cctx *)ctx)->inst;
    char why[MQTT_DETAIL_MAX];
    (void)props;
    snprintf(why, sizeof why, "server sent DISCONNECT 0x%02x %s", (unsigned)reason,
             MQTTReasonCode_toString(reason));
    pthread_mutex_lock(&inst->mu);
    if (!mqtt_client_stale_locked(ctx))
        mqtt_lost_locked(inst, why);
    pthread_mutex_unlock(&inst->mu);
}

/* Start a connect of client, generation gen (mu NOT held: paho takes its own mutex). */
static void mqtt_start_connect(mqtt_inst *inst, MQTTAsync client, int gen)
{
    MQTTAsync_connectOptions co = inst->conn_opts;
    co.context = &inst->cctx[gen];
    int rc = MQTTAsync_connect(client, &co);
    if (rc != MQTTASYNC_SUCCESS) {
        MQTTAsync_failureData5 fd = MQTTAsync_failureData5_initializer;
        fd.code = rc;
        mqtt_on_connect_fail(&inst->cctx[gen], &fd);
    }
}

/* Nudges. With Nagle on at the broker (Mosquitto's default, set_tcp_nodelay
 * false) a PUBACK written while an earlier one is not yet acknowledged by
 * TCP waits for that ACK, and the relay's host delays its ACKs (40 ms on
 * Linux) when it has nothing to send: the tail of every batch, whose last
 * PUBACKs the relay waits for before it can mark the rows, stalls about
 * 40 ms. A packet from the relay carries the ACK at once, so a tail that
 * sees no acknowledgement for nudge_ms gets one: an UNSUBSCRIBE of a filter
 * this clean session never subscribed to (the broker answers UNSUBACK 0x11,
 * no subscription existed, and changes nothing). Another only after an
 * acknowledgement came since (a broker far away gets one per tail, not one
 * every nudge_ms). */
static void mqtt_nudge_done(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_inst *inst = ((mqtt_cctx *)ctx)->inst;
    (void)resp;
    pthread_mutex_lock(&inst->mu);
    if (!mqtt_client_stale_locked(ctx) && inst->nudges_out > 0)
        inst->nudges_out--;
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_nudge_failed(void *ctx, MQTTAsync_failureData5 *resp)
{
    (void)resp;
    mqtt_nudge_done(ctx, NULL);
}

/* Sends a nudge on client, generation gen (mu NOT held). */
static void mqtt_nudge(mqtt_inst *inst, MQTTAsync client, int gen)
{
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    ro.onSuccess5 = mqtt_nudge_done;
    ro.onFailure5 = mqtt_nudge_failed;
    ro.context = &inst->cctx[gen];
    if (MQTTAsync_unsubscribe(client, MQTT_NUDGE_TOPIC, &ro) != MQTTASYNC_SUCCESS)
        mqtt_nudge_done(&inst->cctx[gen], NULL);
}

/* A broker that acknowledges nothing, for this host (1.0: RETRIABLE). */
static obx_status mqtt_pushback(const mqtt_inst *inst)
{
    obx_status st = mqc_timeout_status();
    return st == OBX_UNAVAILABLE ? inst->unavailable : st;
}

/* Timer thread: publish timeouts and (re)connects with backoff. */
void *mqtt_timer_main(void *arg)
{
    mqtt_inst *inst = arg;
    char detail[MQTT_DETAIL_MAX];
    uint64_t seen_acks = 0;            /* the tail watch: acknowledgements at seen_ms */
    uint64_t nudged_acks = UINT64_MAX; /* acknowledgements at the last nudge */
    int64_t seen_ms = 0;
    pthread_mutex_lock(&inst->mu);
    while (!inst->stopping) {
        int64_t now = mqc_now_ms();
        int timed_out = 0;
        for (int i = 0; i < inst->window; i++) {
            mqtt_slot *s = &inst->slots[i];
            if (s->state == MQTT_SLOT_INFLIGHT && s->deadline_ms <= now) {
                snprintf(detail, sizeof detail, "no acknowledgement within %lld ms",
                         (long long)inst->publish_timeout_ms);
                inst->n_timeout++;
                inst->abandoned++;
                timed_out++;
                mqtt_complete_locked(inst, s, mqtt_pushback(inst), 0, detail);
            }
        }
        if (timed_out && inst->queue_head) {
            /* a broker that stopped acknowledging would time out the queue
             * one window at a time: hand it back now */
            snprintf(detail, sizeof detail,
                     "not sent: the broker acknowledged nothing within %lld ms",
                     (long long)inst->publish_timeout_ms);
            while (inst->queue_head) {
                mqtt_item *it = inst->queue_head;
                inst->queue_head = it->next;
                inst->queued--;
                inst->n_failed++;
                mqtt_complete_item_locked(inst, it, mqtt_pushback(inst), 0, detail);
            }
            inst->queue_tail = NULL;
        }
        if (inst->queue_head && inst->connected && !inst->pumping &&
            inst->inflight < inst->send_limit) {
            /* room that no acknowledgement will announce (timeouts, failed sends) */
            pthread_mutex_unlock(&inst->mu);
            mqtt_pump(inst);
            pthread_mutex_lock(&inst->mu);
            continue;
        }
        if (!inst->connected && !inst->connecting && now >= inst->next_connect_ms) {
            inst->connecting = 1;
            inst->connect_attempts++;
            if (inst->fresh_needed && mqtt_client_renew_locked(inst) != 0)
                inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                                "cannot make a fresh client: connecting the lost one again");
            MQTTAsync client = inst->client;
            int gen = inst->gen;
            pthread_mutex_unlock(&inst->mu);
            mqtt_start_connect(inst, client, gen);
            pthread_mutex_lock(&inst->mu);
            continue;
        }
        /* a batch's tail: everything sent, acknowledgements awaited */
        int tail = inst->nudge_ms > 0 && inst->connected && !inst->queue_head && inst->inflight > 0;
        if (!tail || inst->n_acks != seen_acks) {
            seen_acks = inst->n_acks;
            seen_ms = now;
            if (!tail)
                nudged_acks = UINT64_MAX;
        } else if (now - seen_ms >= inst->nudge_ms && inst->n_acks != nudged_acks &&
                   inst->nudges_out < MQTT_NUDGES_MAX && !inst->pumping) {
            inst->nudges_out++;
            inst->n_nudges++;
            nudged_acks = inst->n_acks;
            seen_ms = now;
            MQTTAsync client = inst->client; /* renewal is this thread's own */
            int gen = inst->gen;
            pthread_mutex_unlock(&inst->mu);
            mqtt_nudge(inst, client, gen);
            pthread_mutex_lock(&inst->mu);
            continue;
        }
        struct timespec ts;
        mqc_abstime(
            tail && inst->nudge_ms < MQTT_TIMER_TICK_MS ? inst->nudge_ms : MQTT_TIMER_TICK_MS, &ts);
        pthread_cond_timedwait(&inst->cond, &inst->mu, &ts);
    }
    pthread_mutex_unlock(&inst->mu);
    return NULL;
}

obx_status mqtt_probe(mqtt_inst *inst, int timeout_ms)
{
    pthread_mutex_lock(&inst->mu);
    if (!inst->connected && !inst->connecting && !inst->closed) {
        /* the host is asking now: no need to sit out the backoff */
        inst->next_connect_ms = 0;
        pthread_cond_broadcast(&inst->cond);
    }
    mqc_wait_connected_locked(&inst->mu, &inst->cond, &inst->connected, &inst->closed, timeout_ms);
    obx_status st = inst->connected && !inst->closed ? OBX_OK : OBX_UNAVAILABLE;
    pthread_mutex_unlock(&inst->mu);
    return st;
}
