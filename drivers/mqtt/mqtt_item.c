/*
 * MQTT driver: checking a message and copying it, with its MQTT 5
 * properties, into one owned block the queue can keep after publish_batch
 * returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt_item.h"
#include "obx/envelope.h"

#define MQTT_MAX_REMAINING 268435455u /* largest remaining length MQTT can encode */
/* Mosquitto (TOPIC_HIERARCHY_LIMIT) drops the connection, with every
 * publish in flight on it, for a topic of more than 200 '/': such an event
 * is refused alone, before it is sent. */
#define MQTT_TOPIC_SEPARATORS_MAX 200
#define MQTT_TOPIC_LEVELS_MAX 201
#define MQTT_STR2(x) #x
#define MQTT_STR(x) MQTT_STR2(x)

/* Strict UTF-8 as MQTT requires (no overlongs, surrogates or U+0000), and
 * none of the control characters or non-characters a broker MAY close the
 * connection for (Mosquitto does): one bad string must not drop the
 * connection under everybody else's messages. */
int mqtt_utf8_ok(const unsigned char *s, size_t len)
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
    size_t separators = 0;
    for (const char *p = strchr(topic, '/'); p; p = strchr(p + 1, '/'))
        separators++;
    if (separators > MQTT_TOPIC_SEPARATORS_MAX)
        return "invalid topic: more than " MQTT_STR(
            MQTT_TOPIC_LEVELS_MAX) " levels (Mosquitto disconnects a client that publishes one)";
    if (!mqtt_utf8_ok((const unsigned char *)topic, len))
        return "invalid topic: not valid UTF-8, or contains control characters";
    return NULL;
}

static const char *mqtt_content_type(const mqtt_inst *inst, const obx_message *m)
{
    const char *ct = inst->content_type ? inst->content_type : m->content_type;
    return ct && *ct ? ct : NULL;
}

static size_t mqtt_varint_len(size_t v)
{
    return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4;
}

static int mqtt_header_ok(const char *s)
{
    size_t len = strlen(s);
    return len <= 65535 && mqtt_utf8_ok((const unsigned char *)s, len);
}

const char *mqtt_message_problem(const mqtt_inst *inst, const obx_message *m)
{
    static __thread char why[MQTT_DETAIL_MAX];
    const char *tp = mqtt_topic_problem(m->destination);
    if (tp)
        return tp;
    /* a non-UTF-8 string would make the broker drop the connection for everyone */
    size_t props = 0;
    obx_envelope env;
    obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    for (size_t i = 0; i < env.count; i++) {
        if (!mqtt_header_ok(env.field[i].value))
            return "invalid header: an event field is not valid UTF-8 or has control characters";
        props += 1 + 2 + strlen(env.field[i].name) + 2 + strlen(env.field[i].value);
    }
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (!h->key || !h->value)
            continue;
        if (!mqtt_header_ok(h->key) || !mqtt_header_ok(h->value))
            return "invalid header: key or value is not valid UTF-8, has control characters or is "
                   "too long";
        props += 1 + 2 + strlen(h->key) + 2 + strlen(h->value);
    }
    const char *ct = mqtt_content_type(inst, m);
    props += ct ? 1 + 2 + strlen(ct) : 0;
    props += inst->message_expiry_s > 0 ? 5 : 0;
    size_t remaining = 2 + strlen(m->destination) + 2 + mqtt_varint_len(props) + props;
    if (m->payload_len > MQTT_MAX_REMAINING || remaining + m->payload_len > MQTT_MAX_REMAINING)
        return "too large: an MQTT packet holds at most 256 MB";
    size_t packet = 1 + mqtt_varint_len(remaining + m->payload_len) + remaining + m->payload_len;
    if (inst->max_packet && packet > inst->max_packet) {
        snprintf(why, sizeof why,
                 "too large: %zu bytes as an MQTT packet, the broker accepts at most %u "
                 "(its Maximum Packet Size)",
                 packet, inst->max_packet);
        return why;
    }
    return NULL;
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

mqtt_item *mqtt_item_new(const mqtt_inst *inst, const obx_message *m)
{
    obx_envelope env;
    obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    const char *ct = mqtt_content_type(inst, m);
    size_t nprops = env.count, bytes = strlen(m->destination) + 1 + m->payload_len + 1;
    for (size_t i = 0; i < env.count; i++)
        bytes += strlen(env.field[i].name) + strlen(env.field[i].value) + 2;
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key && m->headers[i].value) {
            nprops++;
            bytes += strlen(m->headers[i].key) + strlen(m->headers[i].value) + 2;
        }
    if (ct) {
        nprops++;
        bytes += strlen(ct) + 1;
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
    it->agg = obx_aggregate_hash(m);
    it->topic = mqtt_put(&cur, m->destination, strlen(m->destination));
    it->payload = cur;
    if (m->payload_len)
        memcpy(cur, m->payload, m->payload_len);
    cur += m->payload_len + 1;
    it->payload_len = (int)m->payload_len;

    MQTTProperty *p = it->props;
    int n = 0;
    for (size_t i = 0; i < env.count; i++)
        mqtt_user_prop(&p[n++], &cur, env.field[i].name, env.field[i].value);
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key && m->headers[i].value)
            mqtt_user_prop(&p[n++], &cur, m->headers[i].key, m->headers[i].value);
    if (ct) {
        size_t len = strlen(ct);
        p[n].identifier = MQTTPROPERTY_CODE_CONTENT_TYPE;
        p[n].value.data.data = mqtt_put(&cur, ct, len);
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
