/*
 * MQTT 5 driver: publishing and acknowledgements.
 *
 * A message is OK only when onSuccess5 reports a success reason code for its
 * PUBACK (QoS 1) or PUBCOMP (QoS 2). deliveryComplete is not used: it fires
 * for any PUBACK, whatever its reason code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqc_clock.h"
#include "mqc_host.h"
#include "mqc_verdict.h"
#include "mqtt_complete.h"
#include "mqtt_item.h"
#include "mqtt_publish.h"
#include "obx/driver_util.h"

/* ------------------------------------------------------------ checks */

/* mqc_reason_status for this host: a 1.0 host knows no UNAVAILABLE. */
static obx_status mqtt_reason(const mqtt_inst *inst, int reason)
{
    obx_status st = mqc_reason_status(reason);
    return st == OBX_UNAVAILABLE ? inst->unavailable : st;
}

/* ------------------------------------------------------------ acknowledgements */

/* Record the outcome of paho token ptoken for the slot of ctx (any paho
 * thread); the freed slot lets the next queued message go at once, from
 * this thread. */
static void mqtt_finish(const mqtt_pctx *ctx, int ptoken, obx_status status, int code,
                        const char *detail)
{
    mqtt_slot *slot = ctx->slot;
    mqtt_inst *inst = slot->inst;
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        /* close already completed it "aborted" */
    } else if (ctx->gen != inst->gen) {
        /* a retired client's: given back when its connection was lost */
    } else if (slot->state == MQTT_SLOT_INFLIGHT && slot->ptoken == ptoken) {
        inst->n_acks++;
        if (status == OBX_OK && !slot->doomed)
            inst->n_ok++;
        else
            inst->n_failed++;
        mqtt_complete_locked(inst, slot, status, code, detail);
    } else if (slot->state == MQTT_SLOT_SENDING) {
        /* sendMessage has not returned the token yet: keep the result for it
         * (two records, in case a stale one of the slot's previous occupant
         * arrives in the same window) */
        mqtt_early *e = slot->early[0].used ? &slot->early[1] : &slot->early[0];
        e->used = 1;
        e->ptoken = ptoken;
        e->status = status;
        e->code = code;
        snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
    }
    /* else: stale (completed on timeout or connection loss, maybe reused) */
    int more = inst->queue_head != NULL;
    pthread_mutex_unlock(&inst->mu);
    if (more)
        mqtt_pump(inst);
}

static void mqtt_on_publish_ok(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_slot *slot = ((mqtt_pctx *)ctx)->slot;
    int rc = (int)resp->reasonCode;
    char detail[MQTT_DETAIL_MAX];
    if (rc >= MQTTREASONCODE_UNSPECIFIED_ERROR) { /* defensive: paho sends these to onFailure5 */
        snprintf(detail, sizeof detail, "PUBACK 0x%02x %s", (unsigned)rc,
                 MQTTReasonCode_toString(resp->reasonCode));
        mqtt_finish(ctx, resp->token, mqtt_reason(slot->inst, rc), rc, detail);
        return;
    }
    if (rc == MQTTREASONCODE_NO_MATCHING_SUBSCRIBERS) {
        /* accepted by the broker; nobody listens yet, which is the consumers' business */
        mqtt_inst *inst = slot->inst;
        pthread_mutex_lock(&inst->mu);
        if (inst->n_no_subscribers++ == 0)
            inst->host->log(inst->host->host_ctx, OBX_LOG_DEBUG,
                            "broker reports no matching subscribers (0x10); counted as delivered");
        pthread_mutex_unlock(&inst->mu);
    }
    mqtt_finish(ctx, resp->token, OBX_OK, rc, NULL);
}

static void mqtt_on_publish_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    mqtt_slot *slot = ((mqtt_pctx *)ctx)->slot;
    char detail[MQTT_DETAIL_MAX];
    int reason = (int)resp->reasonCode;
    if (reason >= MQTTREASONCODE_UNSPECIFIED_ERROR) {
        const char *pkt = resp->packet_type == 5 ? "PUBREC" : "PUBACK";
        MQTTProperty *rs =
            MQTTProperties_getProperty(&resp->properties, MQTTPROPERTY_CODE_REASON_STRING);
        if (rs)
            snprintf(detail, sizeof detail, "%s 0x%02x %s: %.*s", pkt, (unsigned)reason,
                     MQTTReasonCode_toString(resp->reasonCode), rs->value.data.len,
                     rs->value.data.data);
        else
            snprintf(detail, sizeof detail, "%s 0x%02x %s", pkt, (unsigned)reason,
                     MQTTReasonCode_toString(resp->reasonCode));
        mqtt_finish(ctx, resp->token, mqtt_reason(slot->inst, reason), reason, detail);
        return;
    }
    /* a client-side failure: interrupted by a disconnect, discarded, ... */
    snprintf(detail, sizeof detail, "publish failed: %s%s%s", MQTTAsync_strerror(resp->code),
             resp->message ? ": " : "", resp->message ? resp->message : "");
    int gone = resp->code == MQTTASYNC_DISCONNECTED || resp->code == MQTTASYNC_OPERATION_INCOMPLETE;
    mqtt_finish(ctx, resp->token, gone ? slot->inst->unavailable : OBX_RETRIABLE, resp->code,
                detail);
}

/* ------------------------------------------------------------ sending */

/* paho's immediate refusal of a send */
static obx_status mqtt_send_rc_status(const mqtt_inst *inst, int rc)
{
    switch (rc) {
    case MQTTASYNC_BAD_UTF8_STRING:
    case MQTTASYNC_TOPICNAME_TRUNCATED:
    case MQTTASYNC_BAD_MQTT_OPTION: return OBX_PERMANENT;
    case MQTTASYNC_DISCONNECTED:
    /* full of publishes the broker has not acknowledged: pushback */
    case MQTTASYNC_MAX_BUFFERED_MESSAGES:
    case MQTTASYNC_NO_MORE_MSGIDS: return inst->unavailable;
    default: /* out of memory, ... */ return OBX_RETRIABLE;
    }
}

/* The outcome of MQTTAsync_sendMessage for slot (mu held). */
static void mqtt_sent_locked(mqtt_inst *inst, mqtt_slot *slot, int rc, int ptoken)
{
    if (rc != MQTTASYNC_SUCCESS) {
        char detail[MQTT_DETAIL_MAX];
        snprintf(detail, sizeof detail, "refused by the client: %s", MQTTAsync_strerror(rc));
        /* paho full while our window is not: it still holds timed-out publishes */
        if ((rc == MQTTASYNC_MAX_BUFFERED_MESSAGES || rc == MQTTASYNC_NO_MORE_MSGIDS) &&
            inst->abandoned > 0)
            inst->wedged = 1;
        inst->n_failed++;
        mqtt_complete_locked(inst, slot, mqtt_send_rc_status(inst, rc), rc, detail);
        return;
    }
    if (inst->closed) { /* close is waiting for this send: it is aborted like the others */
        mqtt_complete_locked(inst, slot, OBX_RETRIABLE, 0, "aborted: driver closed");
        return;
    }
    slot->state = MQTT_SLOT_INFLIGHT;
    slot->ptoken = ptoken;
    slot->deadline_ms = mqc_now_ms() + inst->publish_timeout_ms;
    for (int i = 0; i < 2; i++) {
        mqtt_early *e = &slot->early[i];
        if (e->used && e->ptoken == ptoken) {
            if (e->status == OBX_OK && !slot->doomed)
                inst->n_ok++;
            else
                inst->n_failed++;
            mqtt_complete_locked(inst, slot, e->status, e->code, e->detail[0] ? e->detail : NULL);
            return;
        }
    }
    /* the connection may have dropped while we were sending */
    if (!inst->connected && !inst->closed) {
        inst->n_lost++;
        mqtt_complete_locked(inst, slot, inst->unavailable, 0,
                             "connection lost before the acknowledgement");
    }
}

/* Hand one queued item to paho (mu held on entry and exit, released around
 * the call: paho takes its own locks and calls back into us). */
static void mqtt_send_item_locked(mqtt_inst *inst, mqtt_item *it)
{
    mqtt_slot *slot = &inst->slots[inst->free_idx[--inst->free_n]];
    slot->state = MQTT_SLOT_SENDING;
    slot->token = it->token;
    slot->agg = it->agg;
    slot->seq = it->seq;
    slot->doomed = OBX_OK;
    slot->early[0].used = slot->early[1].used = 0;
    inst->inflight++;
    /* renewal waits for the pump, so this client stays current during the call */
    MQTTAsync client = inst->client;
    mqtt_pctx *ctx = &inst->pctx[inst->gen * inst->window + (slot - inst->slots)];
    pthread_mutex_unlock(&inst->mu);

    MQTTAsync_message msg = MQTTAsync_message_initializer;
    msg.payload = it->payload;
    msg.payloadlen = it->payload_len;
    msg.qos = inst->qos;
    msg.retained = 0;
    msg.properties.count = it->nprops;
    msg.properties.max_count = it->nprops;
    msg.properties.array = it->props;
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    ro.onSuccess5 = mqtt_on_publish_ok;
    ro.onFailure5 = mqtt_on_publish_fail;
    ro.context = ctx;
    int rc = MQTTAsync_sendMessage(client, it->topic, &msg, &ro);

    pthread_mutex_lock(&inst->mu);
    mqtt_sent_locked(inst, slot, rc, ro.token);
    free(it);
}

void mqtt_pump(mqtt_inst *inst)
{
    pthread_mutex_lock(&inst->mu);
    /* Only one thread sends at a time, so paho gets the queue in order; a
     * thread finding the pump busy leaves its work to it (the loop below
     * re-reads the state after every send). */
    if (inst->pumping) {
        pthread_mutex_unlock(&inst->mu);
        return;
    }
    inst->pumping = 1;
    int sent = 0;
    while (inst->queue_head && !inst->closed) {
        mqtt_item *it = inst->queue_head;
        if (!inst->connected) {
            /* accepted while connected, lost before it could be sent */
            mqtt_fail_all_locked(inst, inst->unavailable,
                                 "connection lost before the message could be sent");
            break;
        }
        if (!it->doomed && inst->inflight >= inst->send_limit) {
            inst->n_window_full++;
            break;
        }
        inst->queue_head = it->next;
        if (!inst->queue_head)
            inst->queue_tail = NULL;
        inst->queued--;
        if (it->doomed) {
            inst->n_failed++;
            mqtt_complete_item_locked(inst, it, it->doomed, 0,
                                      "not sent: an earlier event of its aggregate failed");
            continue;
        }
        mqtt_send_item_locked(inst, it);
        sent = 1;
    }
    inst->pumping = 0;
    /* close and renewal wait for the pump to stop; the timer thread watches
     * a batch's tail (all sent, acknowledgements awaited: mqtt_conn.c) */
    if (inst->closed || inst->pump_waiters || (sent && !inst->queue_head && inst->inflight > 0))
        pthread_cond_broadcast(&inst->cond);
    pthread_mutex_unlock(&inst->mu);
}

/* ------------------------------------------------------------ publish */

/* Refuses m now (mqc_refuse: a 1.0 host gets PERMANENT ones completed). */
static obx_status mqtt_refuse(mqtt_inst *inst, const obx_message *m, obx_status status,
                              const char *why)
{
    return mqc_refuse(inst->host, inst->has_refuse, &inst->mu, &inst->n_failed, m, status, why);
}

static int mqtt_agg_in(const uint64_t *set, size_t n, uint64_t agg)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == agg)
            return 1;
    return 0;
}

/* Waits (mu held) up to window_wait_ms for a (re)connection; never for room
 * in the window: messages beyond it wait in the queue. */
static void mqtt_wait_connected_locked(mqtt_inst *inst)
{
    if (inst->connected || inst->closed || inst->window_wait_ms <= 0)
        return;
    inst->n_conn_waits++;
    mqc_wait_connected_locked(&inst->mu, &inst->cond, &inst->connected, &inst->closed,
                              inst->window_wait_ms);
}

obx_status mqtt_publish_batch(mqtt_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    char why[2 * MQTT_DETAIL_MAX];
    pthread_mutex_lock(&inst->mu);
    inst->n_batches++;
    mqtt_wait_connected_locked(inst);
    int closed = inst->closed, connected = inst->connected, wedged = inst->wedged;
    MQTTAsync client = inst->client;
    snprintf(why, sizeof why, "not connected to %.100s%s%s", inst->url_shown,
             inst->last_connect_err[0] ? ": " : "", inst->last_connect_err);
    pthread_mutex_unlock(&inst->mu);
    /* paho may know of a lost connection before its callback reaches us */
    if (connected && !closed && !MQTTAsync_isConnected(client))
        connected = 0;
    if (closed || wedged) {
        for (size_t i = 0; i < count; i++)
            accept[i] = OBX_RETRIABLE;
        if (wedged)
            inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR,
                            "the client still holds unacknowledged timed-out publishes and "
                            "accepts no more: instance must be re-created");
        return OBX_FATAL;
    }
    if (!connected) {
        for (size_t i = 0; i < count; i++)
            accept[i] = mqtt_refuse(inst, &msgs[i], inst->unavailable, why);
        return OBX_OK;
    }

    /* Once an event is refused, later ones of its aggregate in the batch are
     * refused too: none may be delivered ahead of it. */
    uint64_t *refused = NULL;
    size_t nrefused = 0;
    mqtt_item *head = NULL, **tail = &head;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const obx_message *m = &msgs[i];
        uint64_t agg = obx_aggregate_hash(m);
        const char *problem = NULL;
        obx_status st = OBX_PERMANENT;
        mqtt_item *it = NULL;
        if (mqtt_agg_in(refused, nrefused, agg)) {
            problem = "not sent: an earlier event of its aggregate in this batch was refused";
            st = OBX_RETRIABLE;
        } else if (!(problem = mqtt_item_make(inst, m, agg, &it)) && !it) {
            problem = "out of memory";
            st = OBX_RETRIABLE;
        }
        if (problem) {
            if (!refused)
                refused = malloc(count * sizeof *refused);
            if (refused && !mqtt_agg_in(refused, nrefused, agg))
                refused[nrefused++] = agg;
            accept[i] = mqtt_refuse(inst, m, st, problem);
            continue;
        }
        accept[i] = OBX_OK;
        *tail = it;
        tail = &it->next;
        n++;
    }
    free(refused);

    pthread_mutex_lock(&inst->mu);
    for (mqtt_item *it = head; it; it = it->next)
        it->seq = inst->next_seq++;
    if (head) {
        if (inst->queue_tail)
            inst->queue_tail->next = head;
        else
            inst->queue_head = head;
        for (inst->queue_tail = head; inst->queue_tail->next;)
            inst->queue_tail = inst->queue_tail->next;
        inst->queued += n;
    }
    /* what cannot go out at once waits in the queue: count it */
    size_t room =
        inst->inflight < inst->send_limit ? (size_t)(inst->send_limit - inst->inflight) : 0;
    if (inst->queued > room)
        inst->n_queued += inst->queued - room < n ? inst->queued - room : n;
    if (inst->queued > inst->queue_max)
        inst->queue_max = inst->queued;
    pthread_mutex_unlock(&inst->mu);
    mqtt_pump(inst);
    return OBX_OK;
}
