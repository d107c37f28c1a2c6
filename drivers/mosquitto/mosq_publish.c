/*
 * mosquitto driver: handing a batch to libmosquitto. Each message is checked
 * and shaped (mosq_props.c) without the lock, then given to
 * mosquitto_publish_v5 and tracked under it; libmosquitto sends in call
 * order, keeps at most min(max_in_flight, the broker's Receive Maximum)
 * unacknowledged and queues the rest, so a batch never waits for room. A
 * message is OK only on its PUBACK (PUBCOMP at QoS 2) with a success reason
 * code (mosq_client.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "mosq_props.h"
#include "mosq_loop.h"
#include "mosq_publish.h"
#include "mosq_track.h"
#include "mqc_host.h"
#include "obx/driver_util.h"

/* Refuses m now (mqc_refuse: a 1.0 host gets PERMANENT ones completed). */
static obx_status mosq_refuse(mosq_inst *inst, const obx_message *m, obx_status status,
                              const char *why)
{
    return mqc_refuse(inst->host, inst->has_refuse, &inst->mu, &inst->n_failed, m, status, why);
}

/* libmosquitto's refusal of a publish: whose fault, and why. */
static obx_status mosq_send_rc_status(const mosq_inst *inst, int rc, const char **why)
{
    switch (rc) {
    case MOSQ_ERR_OVERSIZE_PACKET:
        *why = "too large: over the broker's Maximum Packet Size";
        return OBX_PERMANENT;
    case MOSQ_ERR_PAYLOAD_SIZE:
        *why = "too large: an MQTT packet holds at most 256 MB";
        return OBX_PERMANENT;
    case MOSQ_ERR_INVAL:
    case MOSQ_ERR_MALFORMED_UTF8:
    case MOSQ_ERR_DUPLICATE_PROPERTY:
    case MOSQ_ERR_QOS_NOT_SUPPORTED: *why = mosquitto_strerror(rc); return OBX_PERMANENT;
    case MOSQ_ERR_NO_CONN:
    case MOSQ_ERR_CONN_LOST:
        *why = "connection lost before the message could be sent";
        return inst->unavailable;
    default: *why = mosquitto_strerror(rc); return OBX_RETRIABLE;
    }
}

/* Hands one shaped message to libmosquitto and tracks it; OK or why not. */
static obx_status mosq_send(mosq_inst *inst, const obx_message *m, uint64_t agg,
                            const mosq_shape *sh, const char **why)
{
    obx_status st = OBX_OK;
    int mid = 0;
    pthread_mutex_lock(&inst->mu);
    if (inst->closed || !inst->connected || !inst->mosq) {
        *why = "connection lost before the message could be sent";
        st = inst->closed ? OBX_RETRIABLE : inst->unavailable;
    } else {
        int rc = mosquitto_publish_v5(inst->mosq, &mid, m->destination, (int)sh->msg.body_len,
                                      sh->msg.body, inst->qos, false, sh->props);
        if (rc != MOSQ_ERR_SUCCESS)
            st = mosq_send_rc_status(inst, rc, why);
        else if (mosq_track_push(inst, m->token, agg, mid,
                                 mqc_now_ms() + inst->publish_timeout_ms) < 0) {
            *why = "out of memory"; /* sent untracked: at worst a duplicate */
            st = OBX_RETRIABLE;
        }
    }
    pthread_mutex_unlock(&inst->mu);
    return st;
}

obx_status mosq_publish_batch(mosq_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    char why_nc[2 * MOSQ_DETAIL_MAX];
    pthread_mutex_lock(&inst->mu);
    inst->n_batches++;
    /* up to window_wait_ms for a (re)connection */
    mqc_wait_connected_locked(&inst->mu, &inst->cond, &inst->connected, &inst->closed,
                              inst->window_wait_ms);
    int closed = inst->closed, connected = inst->connected;
    snprintf(why_nc, sizeof why_nc, "not connected to %.100s%s%s", inst->url_shown,
             inst->last_connect_err[0] ? ": " : "", inst->last_connect_err);
    pthread_mutex_unlock(&inst->mu);
    if (closed) {
        for (size_t i = 0; i < count; i++)
            accept[i] = OBX_RETRIABLE;
        return OBX_FATAL;
    }
    if (!connected) {
        for (size_t i = 0; i < count; i++)
            accept[i] = mosq_refuse(inst, &msgs[i], inst->unavailable, why_nc);
        return OBX_OK;
    }

    /* once an event is refused, later ones of its aggregate in the batch are
     * refused too: none may be delivered ahead of it */
    obx_held held = {0};
    for (size_t i = 0; i < count; i++) {
        const obx_message *m = &msgs[i];
        uint64_t agg = obx_aggregate_hash(m);
        const char *why = NULL;
        obx_status st;
        if (obx_held_has(&held, agg)) {
            why = "not sent: an earlier event of its aggregate in this batch was refused";
            st = OBX_RETRIABLE;
        } else {
            mosq_shape sh;
            int nomem = 0;
            why = mosq_shape_make(inst, m, &sh, &nomem);
            if (why)
                st = OBX_PERMANENT;
            else if (nomem)
                why = "out of memory", st = OBX_RETRIABLE;
            else
                st = mosq_send(inst, m, agg, &sh, &why);
            mosq_shape_free(&sh);
        }
        if (st == OBX_OK) {
            accept[i] = OBX_OK;
            continue;
        }
        obx_held_add(&held, agg);
        accept[i] = mosq_refuse(inst, m, st, why);
    }
    obx_held_free(&held);
    return OBX_OK;
}
