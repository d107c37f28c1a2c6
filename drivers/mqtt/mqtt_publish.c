/*
 * MQTT 5 driver: publishing and acknowledgements.
 *
 * A message is OK only when onSuccess5 reports a success reason code for its
 * PUBACK (QoS 1) or PUBCOMP (QoS 2). deliveryComplete is not used: it fires
 * for any PUBACK, whatever its reason code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt_int.h"

/* ------------------------------------------------------------ checks */

obx_status mqtt_classify_reason(int reason)
{
    switch (reason) {
    case MQTTREASONCODE_NOT_AUTHORIZED:     /* 0x87: the ACL will not change by retrying */
    case MQTTREASONCODE_TOPIC_NAME_INVALID: /* 0x90 */
    case MQTTREASONCODE_PAYLOAD_FORMAT_INVALID: /* 0x99 */ return OBX_PERMANENT;
    default: /* 0x97 quota exceeded, 0x89 server busy, 0x80 unspecified, ... */
        return OBX_RETRIABLE;
    }
}

/* Strict UTF-8 as MQTT requires (no overlongs, surrogates or U+0000), and
 * none of the control characters or non-characters a broker MAY close the
 * connection for (Mosquitto does): one bad string must not drop the
 * connection under everybody else's messages. */
static int mqtt_utf8_ok(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned cp;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                return 0;
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07;
        } else {
            return 0;
        }
        for (size_t k = 1; k <= n; k++) {
            if (i + k >= len || (s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp <= 0x9F) ||
            (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
            return 0;
        i += n + 1;
    }
    return 1;
}

const char *mqtt_topic_problem(const char *topic)
{
    if (!topic || !*topic)
        return "invalid topic: empty (check the route's destination)";
    size_t len = strlen(topic);
    if (len > 65535)
        return "invalid topic: longer than 65535 bytes";
    if (strchr(topic, '+') || strchr(topic, '#'))
        return "invalid topic: wildcards '+' and '#' are not allowed in a topic name";
    if (!mqtt_utf8_ok((const unsigned char *)topic, len))
        return "invalid topic: not valid UTF-8, or contains control characters";
    return NULL;
}

/* ------------------------------------------------------------ acknowledgements */

/* Record the outcome of paho token ptoken for slot (any paho thread). */
static void mqtt_finish(mqtt_slot *slot, int ptoken, obx_status status, int code,
                        const char *detail)
{
    mqtt_inst *inst = slot->inst;
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        /* close already completed it "aborted" */
    } else if (slot->state == MQTT_SLOT_INFLIGHT && slot->ptoken == ptoken) {
        if (status == OBX_OK)
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
    pthread_mutex_unlock(&inst->mu);
}

static void mqtt_on_publish_ok(void *ctx, MQTTAsync_successData5 *resp)
{
    mqtt_slot *slot = ctx;
    int rc = (int)resp->reasonCode;
    char detail[MQTT_DETAIL_MAX];
    if (rc >= MQTTREASONCODE_UNSPECIFIED_ERROR) { /* defensive: paho sends these to onFailure5 */
        snprintf(detail, sizeof detail, "PUBACK 0x%02x %s", (unsigned)rc,
                 MQTTReasonCode_toString(resp->reasonCode));
        mqtt_finish(slot, resp->token, mqtt_classify_reason(rc), rc, detail);
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
    mqtt_finish(slot, resp->token, OBX_OK, rc, NULL);
}

static void mqtt_on_publish_fail(void *ctx, MQTTAsync_failureData5 *resp)
{
    mqtt_slot *slot = ctx;
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
        mqtt_finish(slot, resp->token, mqtt_classify_reason(reason), reason, detail);
        return;
    }
    /* a client-side failure: interrupted by a disconnect, discarded, ... */
    snprintf(detail, sizeof detail, "publish failed: %s%s%s", MQTTAsync_strerror(resp->code),
             resp->message ? ": " : "", resp->message ? resp->message : "");
    mqtt_finish(slot, resp->token, OBX_RETRIABLE, resp->code, detail);
}

/* ------------------------------------------------------------ publish */

static void mqtt_user_prop(MQTTProperty *p, const char *key, const char *value)
{
    p->identifier = MQTTPROPERTY_CODE_USER_PROPERTY;
    p->value.data.data = (char *)key;
    p->value.data.len = (int)strlen(key);
    p->value.value.data = (char *)value;
    p->value.value.len = (int)strlen(value);
}

static void mqtt_format_time(int64_t us, char *buf, size_t size)
{
    time_t secs = (time_t)(us / 1000000);
    long frac = (long)(us % 1000000);
    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%06ldZ", frac);
}

/* Builds the message's properties in inst->props (valid until the next
 * call; paho copies them). Returns the count, or -1 (invalid) / -2 (no
 * memory) with why set. */
static int mqtt_build_props(mqtt_inst *inst, const obx_message *m, char *created, size_t created_sz,
                            const char **why)
{
    size_t need = 7 + m->header_count;
    if (need > inst->props_cap) {
        MQTTProperty *np = realloc(inst->props, need * sizeof *np);
        if (!np) {
            *why = "out of memory";
            return -2;
        }
        inst->props = np;
        inst->props_cap = need;
    }
    MQTTProperty *p = inst->props;
    int n = 0;
    mqtt_format_time(m->created_at_us, created, created_sz);
    const char *fixed[5][2] = {{"event_id", m->event_id},
                               {"event_type", m->event_type},
                               {"aggregate_type", m->aggregate_type},
                               {"aggregate_id", m->aggregate_id},
                               {"created_at", created}};
    for (int i = 0; i < 5; i++)
        if (fixed[i][1])
            mqtt_user_prop(&p[n++], fixed[i][0], fixed[i][1]);
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (!h->key || !h->value)
            continue;
        mqtt_user_prop(&p[n++], h->key, h->value);
    }
    /* a non-UTF-8 string would make the broker drop the connection for everyone */
    for (int i = 0; i < n; i++) {
        if (!mqtt_utf8_ok((const unsigned char *)p[i].value.data.data,
                          (size_t)p[i].value.data.len) ||
            !mqtt_utf8_ok((const unsigned char *)p[i].value.value.data,
                          (size_t)p[i].value.value.len) ||
            p[i].value.data.len > 65535 || p[i].value.value.len > 65535) {
            *why = "invalid header: key or value is not valid UTF-8, has control characters or is "
                   "too long";
            return -1;
        }
    }
    const char *ct = inst->content_type ? inst->content_type : m->content_type;
    if (ct && *ct) {
        p[n].identifier = MQTTPROPERTY_CODE_CONTENT_TYPE;
        p[n].value.data.data = (char *)ct;
        p[n].value.data.len = (int)strlen(ct);
        n++;
    }
    if (inst->message_expiry_s > 0) {
        p[n].identifier = MQTTPROPERTY_CODE_MESSAGE_EXPIRY_INTERVAL;
        p[n].value.integer4 = (unsigned)inst->message_expiry_s;
        n++;
    }
    return n;
}

/* paho's immediate refusal of a send */
static obx_status mqtt_send_rc_status(int rc)
{
    switch (rc) {
    case MQTTASYNC_BAD_UTF8_STRING:
    case MQTTASYNC_TOPICNAME_TRUNCATED:
    case MQTTASYNC_BAD_MQTT_OPTION: return OBX_PERMANENT;
    default: /* disconnected, too many in flight or buffered, out of ids */ return OBX_RETRIABLE;
    }
}

/* Accept-time PERMANENT with a reason: the ABI's accept status carries no
 * text, so the message is accepted and completed at once, and the reason
 * reaches the row's last_error. Nothing is sent to the broker. */
static obx_status mqtt_reject(mqtt_inst *inst, const obx_message *m, const char *why)
{
    inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "event %s: %s (destination \"%.200s\")",
                    m->event_id ? m->event_id : "?", why, m->destination ? m->destination : "");
    pthread_mutex_lock(&inst->mu);
    inst->n_failed++;
    inst->host->complete(inst->host->host_ctx, m->token, OBX_PERMANENT, 0, why);
    pthread_mutex_unlock(&inst->mu);
    return OBX_OK;
}

/* Waits (mu held) until connected with a free slot, or wait_until; 0 when
 * ready. The engine publishes whole claimed batches and counts a refusal as
 * an attempt, so a full window or a short reconnect briefly holds the caller
 * back instead of refusing. */
static int mqtt_wait_slot_locked(mqtt_inst *inst, int64_t wait_until)
{
    while ((inst->free_n == 0 || !inst->connected) && !inst->closed) {
        int64_t left = wait_until - mqtt_now_ms();
        if (left <= 0)
            return -1;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&inst->cond, &inst->mu, &ts);
    }
    return inst->free_n > 0 && inst->connected ? 0 : -1;
}

static obx_status mqtt_publish_one(mqtt_inst *inst, const obx_message *m, int64_t wait_until,
                                   int *wedged)
{
    char created[40];
    const char *why = mqtt_topic_problem(m->destination);
    if (why)
        return mqtt_reject(inst, m, why);
    int nprops = mqtt_build_props(inst, m, created, sizeof created, &why);
    if (nprops == -2)
        return OBX_RETRIABLE;
    if (nprops < 0)
        return mqtt_reject(inst, m, why);

    /* reserve a slot */
    pthread_mutex_lock(&inst->mu);
    if (inst->closed) {
        pthread_mutex_unlock(&inst->mu);
        return OBX_RETRIABLE;
    }
    if (mqtt_wait_slot_locked(inst, wait_until) != 0) {
        pthread_mutex_unlock(&inst->mu);
        return OBX_RETRIABLE; /* offline, or the window stayed full */
    }
    mqtt_slot *slot = &inst->slots[inst->free_idx[--inst->free_n]];
    slot->state = MQTT_SLOT_SENDING;
    slot->token = m->token;
    slot->early[0].used = slot->early[1].used = 0;
    inst->inflight++;
    pthread_mutex_unlock(&inst->mu);

    MQTTAsync_message msg = MQTTAsync_message_initializer;
    msg.payload = (void *)m->payload;
    msg.payloadlen = (int)m->payload_len;
    msg.qos = inst->qos;
    msg.retained = 0;
    msg.properties.count = nprops;
    msg.properties.max_count = nprops;
    msg.properties.array = inst->props;
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    ro.onSuccess5 = mqtt_on_publish_ok;
    ro.onFailure5 = mqtt_on_publish_fail;
    ro.context = slot;
    int rc = m->payload_len > 268435455u
                 ? MQTTASYNC_BAD_MQTT_OPTION
                 : MQTTAsync_sendMessage(inst->client, m->destination, &msg, &ro);

    pthread_mutex_lock(&inst->mu);
    obx_status accept = OBX_OK;
    if (rc != MQTTASYNC_SUCCESS) {
        /* no callback will come for a refused send: release the slot */
        slot->state = MQTT_SLOT_FREE;
        inst->free_idx[inst->free_n++] = (int)(slot - inst->slots);
        inst->inflight--;
        accept = mqtt_send_rc_status(rc);
        /* paho full while our window is not: it still holds timed-out publishes */
        if ((rc == MQTTASYNC_MAX_BUFFERED_MESSAGES || rc == MQTTASYNC_NO_MORE_MSGIDS) &&
            inst->abandoned > 0)
            *wedged = 1;
        if (accept == OBX_PERMANENT)
            inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "event %s refused by client: %s",
                            m->event_id ? m->event_id : "?", MQTTAsync_strerror(rc));
        pthread_cond_broadcast(&inst->cond);
    } else {
        slot->state = MQTT_SLOT_INFLIGHT;
        slot->ptoken = ro.token;
        slot->deadline_ms = mqtt_now_ms() + inst->publish_timeout_ms;
        for (int i = 0; i < 2; i++) {
            mqtt_early *e = &slot->early[i];
            if (e->used && e->ptoken == ro.token) {
                if (e->status == OBX_OK)
                    inst->n_ok++;
                else
                    inst->n_failed++;
                mqtt_complete_locked(inst, slot, e->status, e->code,
                                     e->detail[0] ? e->detail : NULL);
                break;
            }
        }
        /* the connection may have dropped while we were sending */
        if (slot->state == MQTT_SLOT_INFLIGHT && !inst->connected && !inst->closed)
            mqtt_complete_locked(inst, slot, OBX_RETRIABLE, 0, "connection lost");
    }
    pthread_mutex_unlock(&inst->mu);
    return accept;
}

obx_status mqtt_publish_batch(mqtt_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    int wedged = 0;
    int closed;
    pthread_mutex_lock(&inst->mu);
    closed = inst->closed;
    pthread_mutex_unlock(&inst->mu);
    /* After a RETRIABLE refusal (offline, window full) the rest of the batch
     * is refused too: a slot freed meanwhile must not let a later event
     * overtake a refused one of the same aggregate. */
    int refusing = closed;
    int64_t wait_until = mqtt_now_ms() + inst->window_wait_ms;
    for (size_t i = 0; i < count; i++) {
        accept[i] =
            refusing ? OBX_RETRIABLE : mqtt_publish_one(inst, &msgs[i], wait_until, &wedged);
        if (accept[i] == OBX_RETRIABLE)
            refusing = 1;
    }
    if (closed)
        return OBX_FATAL;
    if (wedged) {
        inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR,
                        "client still holds %d unacknowledged timed-out publishes and accepts no "
                        "more: instance must be re-created",
                        inst->abandoned);
        return OBX_FATAL;
    }
    return OBX_OK;
}
