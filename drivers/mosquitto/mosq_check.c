/*
 * mosquitto driver: the checks a message passes before it is sent (the
 * mqtt driver's, drivers/mqtt/mqtt_item.c: one bad string must not make the
 * broker drop the connection under everybody else's messages) and its MQTT 5
 * properties: the relay's envelope (or a CloudEvent's attributes) and the
 * row's headers as user properties, the content type, the expiry.
 */
#include <stdio.h>
#include <string.h>

#include "mosq_check.h"
#include "obx/envelope.h"

/* Mosquitto (TOPIC_HIERARCHY_LIMIT) drops the connection for a topic of
 * more than 200 '/'. */
#define MOSQ_TOPIC_SEPARATORS_MAX 200

/* Strict UTF-8 as MQTT requires, without the control characters and
 * non-characters a broker MAY close the connection for (Mosquitto does). */
static int mosq_utf8_ok(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i], cp;
        size_t n;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                return 0;
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            n = 1, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
            n = 2, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
            n = 3, cp = c & 0x07;
        else
            return 0;
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

static int mosq_text_ok(const char *s)
{
    size_t len = strlen(s);
    return len <= 65535 && mosq_utf8_ok((const unsigned char *)s, len);
}

const char *mosq_topic_problem(const char *topic)
{
    if (!topic || !*topic)
        return "invalid topic: empty (check the route's destination)";
    size_t len = strlen(topic), separators = 0;
    if (len > 65535)
        return "invalid topic: longer than 65535 bytes";
    if (strchr(topic, '+') || strchr(topic, '#'))
        return "invalid topic: wildcards '+' and '#' are not allowed in a topic name";
    for (const char *p = strchr(topic, '/'); p; p = strchr(p + 1, '/'))
        separators++;
    if (separators > MOSQ_TOPIC_SEPARATORS_MAX)
        return "invalid topic: more than 201 levels (Mosquitto disconnects a client that "
               "publishes one)";
    if (!mosq_utf8_ok((const unsigned char *)topic, len))
        return "invalid topic: not valid UTF-8, or contains control characters";
    return NULL;
}

/* One user property; -1: no memory. */
static int mosq_user(mosquitto_property **props, const char *k, const char *v)
{
    return mosquitto_property_add_string_pair(props, MQTT_PROP_USER_PROPERTY, k, v) ==
                   MOSQ_ERR_SUCCESS
               ? 0
               : -1;
}

/* The envelope or the CloudEvent's attributes; 0, -1 (why), -2 (no memory). */
static int mosq_shape_fields(const mosq_inst *inst, const obx_message *m, mosq_shape *sh,
                             const char **ct, char *why, size_t why_size)
{
    if (inst->ce.mode != OBX_CE_OFF) {
        int rc = obx_ce_fill(&sh->ce, &inst->ce, inst->host, m, OBX_CE_MQTT, why, why_size);
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < sh->ce.count; i++) {
            if (!mosq_text_ok(sh->ce.attr[i].value)) {
                snprintf(why, why_size, "invalid header: an event field is not valid UTF-8 or "
                                        "has control characters");
                return -1;
            }
            if (mosq_user(&sh->props, sh->ce.attr[i].name, sh->ce.attr[i].value) < 0)
                return -2;
        }
        sh->body = sh->ce.body;
        sh->body_len = sh->ce.body_len;
        *ct = sh->ce.content_type;
        return 0;
    }
    obx_envelope env;
    obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    for (size_t i = 0; i < env.count; i++) {
        if (!mosq_text_ok(env.field[i].value)) {
            snprintf(why, why_size,
                     "invalid header: an event field is not valid UTF-8 or has control characters");
            return -1;
        }
        if (mosq_user(&sh->props, env.field[i].name, env.field[i].value) < 0)
            return -2;
    }
    return 0;
}

const char *mosq_shape_make(const mosq_inst *inst, const obx_message *m, mosq_shape *sh,
                            int *nomem)
{
    static __thread char why[MOSQ_DETAIL_MAX];
    char ctbuf[1024];
    const char *ct = m->content_type && *m->content_type ? m->content_type : NULL;
    memset(sh, 0, sizeof *sh);
    sh->body = m->payload;
    sh->body_len = m->payload_len;
    *nomem = 0;
    const char *tp = mosq_topic_problem(m->destination);
    if (tp)
        return tp;
    if (inst->content_type) {
        if (obx_ce_expand(inst->content_type, m, ctbuf, sizeof ctbuf) < 0)
            return "content_type: the expanded template is longer than 1023 bytes";
        if (*ctbuf)
            ct = ctbuf;
    }
    int rc = mosq_shape_fields(inst, m, sh, &ct, why, sizeof why);
    if (rc == -2)
        goto nomem;
    if (rc != 0)
        return why;
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (!mosq_text_ok(h->key) || !mosq_text_ok(h->value))
            return "invalid header: key or value is not valid UTF-8, has control characters or is "
                   "too long";
        if (mosq_user(&sh->props, h->key, h->value) < 0)
            goto nomem;
    }
    if (ct) {
        if (!mosq_text_ok(ct))
            return "invalid content type: not valid UTF-8, has control characters or is too long";
        if (mosquitto_property_add_string(&sh->props, MQTT_PROP_CONTENT_TYPE, ct) !=
            MOSQ_ERR_SUCCESS)
            goto nomem;
    }
    if (inst->message_expiry_s > 0 &&
        mosquitto_property_add_int32(&sh->props, MQTT_PROP_MESSAGE_EXPIRY_INTERVAL,
                                     (uint32_t)inst->message_expiry_s) != MOSQ_ERR_SUCCESS)
        goto nomem;
    return NULL;
nomem:
    *nomem = 1;
    return NULL;
}

void mosq_shape_free(mosq_shape *sh)
{
    mosquitto_property_free_all(&sh->props);
    obx_ce_event_free(&sh->ce);
}
