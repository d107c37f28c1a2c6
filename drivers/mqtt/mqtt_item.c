/*
 * MQTT driver: checking a message and copying it, with its MQTT 5
 * properties, into one owned block the queue can keep after publish_batch
 * returns. The message's shape and text checks are both drivers'
 * (drivers/mqtt_common/mqc_shape.c); its size against the broker's Maximum
 * Packet Size, which paho does not check, is this driver's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_item.h"

#define MQTT_MAX_REMAINING 268435455u /* largest remaining length MQTT can encode */

static size_t mqtt_varint_len(size_t v)
{
    return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4;
}

/* NULL when the shaped message fits one MQTT packet the broker takes, else why not. */
static const char *mqtt_size_problem(const mqtt_inst *inst, const obx_message *m,
                                     const mqc_shape *sh)
{
    static __thread char why[MQTT_DETAIL_MAX];
    size_t props = 0;
    for (size_t i = 0; i < sh->count; i++)
        props += 1 + 2 + strlen(sh->field[i].name) + 2 + strlen(sh->field[i].value);
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (h->key && h->value)
            props += 1 + 2 + strlen(h->key) + 2 + strlen(h->value);
    }
    props += sh->ct ? 1 + 2 + strlen(sh->ct) : 0;
    props += sh->response_topic ? 1 + 2 + strlen(sh->response_topic) : 0;
    props += sh->correlation_data ? 1 + 2 + strlen(sh->correlation_data) : 0;
    props += inst->message_expiry_s > 0 ? 5 : 0;
    size_t body_len = sh->body_len;
    size_t remaining = 2 + strlen(m->destination) + 2 + mqtt_varint_len(props) + props;
    if (body_len > MQTT_MAX_REMAINING || remaining + body_len > MQTT_MAX_REMAINING)
        return "too large: an MQTT packet holds at most 256 MB";
    size_t packet = 1 + mqtt_varint_len(remaining + body_len) + remaining + body_len;
    if (inst->max_packet && packet > inst->max_packet) {
        snprintf(why, sizeof why,
                 "too large: %zu bytes as an MQTT packet, the broker accepts at most %u "
                 "(its Maximum Packet Size)",
                 packet, inst->max_packet);
        return why;
    }
    return NULL;
}

static mqtt_item *mqtt_item_shaped(const mqtt_inst *inst, const obx_message *m,
                                   const mqc_shape *sh);

/* The message is shaped (envelope or CloudEvent, templates) once, for the
 * checks and the copy both. */
const char *mqtt_item_make(const mqtt_inst *inst, const obx_message *m, uint64_t agg,
                           mqtt_item **out)
{
    mqc_shape sh;
    int nomem = 0;
    *out = NULL;
    const char *why = mqc_shape_make(inst->host, &inst->ce, &inst->tpl, m, &sh, &nomem);
    if (!why && !nomem)
        why = mqtt_size_problem(inst, m, &sh);
    if (!why && !nomem && (*out = mqtt_item_shaped(inst, m, &sh)) != NULL)
        (*out)->agg = agg;
    mqc_shape_free(&sh);
    return why;
}

/* Appends s to the block at *cur, returns the copy. */
static char *mqtt_put(char **cur, const char *s, size_t len)
{
    char *d = *cur;
    memcpy(d, s, len);
    d[len] = 0;
    *cur += len + 1;
    return d;
}

static void mqtt_user_prop(MQTTProperty *p, char **cur, const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value);
    p->identifier = MQTTPROPERTY_CODE_USER_PROPERTY;
    p->value.data.data = mqtt_put(cur, key, kl);
    p->value.data.len = (int)kl;
    p->value.value.data = mqtt_put(cur, value, vl);
    p->value.value.len = (int)vl;
}

static mqtt_item *mqtt_item_shaped(const mqtt_inst *inst, const obx_message *m, const mqc_shape *sh)
{
    const char *ct = sh->ct;
    size_t nprops = sh->count, bytes = strlen(m->destination) + 1 + sh->body_len + 1;
    for (size_t i = 0; i < sh->count; i++)
        bytes += strlen(sh->field[i].name) + strlen(sh->field[i].value) + 2;
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key && m->headers[i].value) {
            nprops++;
            bytes += strlen(m->headers[i].key) + strlen(m->headers[i].value) + 2;
        }
    const char *texts[] = {ct, sh->response_topic, sh->correlation_data};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        if (texts[i]) {
            nprops++;
            bytes += strlen(texts[i]) + 1;
        }
    if (inst->message_expiry_s > 0)
        nprops++;

    mqtt_item *it = malloc(sizeof *it + nprops * sizeof(MQTTProperty) + bytes);
    if (!it)
        return NULL;
    memset(it, 0, sizeof *it);
    it->props = (MQTTProperty *)(it + 1);
    memset(it->props, 0, nprops * sizeof(MQTTProperty));
    char *cur = (char *)(it->props + nprops);
    it->token = m->token;
    it->topic = mqtt_put(&cur, m->destination, strlen(m->destination));
    it->payload = cur;
    if (sh->body_len)
        memcpy(cur, sh->body, sh->body_len);
    cur += sh->body_len + 1;
    it->payload_len = (int)sh->body_len;

    MQTTProperty *p = it->props;
    int n = 0;
    for (size_t i = 0; i < sh->count; i++)
        mqtt_user_prop(&p[n++], &cur, sh->field[i].name, sh->field[i].value);
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key && m->headers[i].value)
            mqtt_user_prop(&p[n++], &cur, m->headers[i].key, m->headers[i].value);
    static const enum MQTTPropertyCodes codes[] = {MQTTPROPERTY_CODE_CONTENT_TYPE,
                                                   MQTTPROPERTY_CODE_RESPONSE_TOPIC,
                                                   MQTTPROPERTY_CODE_CORRELATION_DATA};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        if (texts[i]) {
            size_t len = strlen(texts[i]);
            p[n].identifier = codes[i];
            p[n].value.data.data = mqtt_put(&cur, texts[i], len);
            p[n].value.data.len = (int)len;
            n++;
        }
    if (inst->message_expiry_s > 0) {
        p[n].identifier = MQTTPROPERTY_CODE_MESSAGE_EXPIRY_INTERVAL;
        p[n].value.integer4 = (unsigned)inst->message_expiry_s;
        n++;
    }
    it->nprops = n;
    return it;
}
