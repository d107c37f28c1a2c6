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

static size_t mqtt_varint_len(size_t v)
{
    return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4;
}

static int mqtt_header_ok(const char *s)
{
    size_t len = strlen(s);
    return len <= 65535 && mqtt_utf8_ok((const unsigned char *)s, len);
}

typedef struct mqtt_shape mqtt_shape;
static const char *mqtt_shape_problem(const mqtt_inst *inst, const obx_message *m, mqtt_shape *sh,
                                      int *nomem);
static mqtt_item *mqtt_item_shaped(const mqtt_inst *inst, const obx_message *m,
                                   const mqtt_shape *sh);

/* An expanded property template, NUL included. */
#define MQTT_PROP_TEXT_MAX 1024

/* What a message is sent as: user properties (the relay's envelope, or with
 * format = "cloudevents" the CloudEvent's attributes), the body, the
 * content type and the properties from templates (in text[], NULL when not
 * sent). mqtt_shape_free releases a structured body. */
struct mqtt_shape {
    size_t count;
    obx_ce_attr field[OBX_CE_A_COUNT + OBX_ENVELOPE_MAX];
    const void *body;
    size_t body_len;
    const char *ct, *response_topic, *correlation_data;
    obx_envelope env;
    obx_ce_event ce;
    char text[3][MQTT_PROP_TEXT_MAX];
};

/* Expands option `name`'s template tpl (NULL: none) for m into buf; *out is
 * the text, or NULL when there is no template or it expands to nothing.
 * 0, or -1 with err when it does not fit. */
static int mqtt_expand(const char *name, const char *tpl, const obx_message *m, char *buf,
                       const char **out, char *err, size_t err_size)
{
    *out = NULL;
    if (!tpl)
        return 0;
    if (obx_ce_expand(tpl, m, buf, MQTT_PROP_TEXT_MAX) < 0) {
        snprintf(err, err_size, "%s \"%.40s...\" is longer than %d bytes", name, buf,
                 MQTT_PROP_TEXT_MAX - 1);
        return -1;
    }
    *out = *buf ? buf : NULL;
    return 0;
}

/* The properties from templates; the row's content type where none is set. */
static int mqtt_shape_props(const mqtt_inst *inst, const obx_message *m, mqtt_shape *sh, char *err,
                            size_t err_size)
{
    if (mqtt_expand("content_type", inst->content_type, m, sh->text[0], &sh->ct, err, err_size) <
            0 ||
        mqtt_expand("response_topic", inst->response_topic, m, sh->text[1], &sh->response_topic,
                    err, err_size) < 0 ||
        mqtt_expand("correlation_data", inst->correlation_data, m, sh->text[2],
                    &sh->correlation_data, err, err_size) < 0)
        return -1;
    if (!sh->ct)
        sh->ct = m->content_type && *m->content_type ? m->content_type : NULL;
    const char *bad = inst->response_topic ? mqtt_topic_problem(sh->response_topic) : NULL;
    if (bad) {
        snprintf(err, err_size, "response_topic \"%.64s\" (from \"%.64s\"): %s",
                 sh->response_topic ? sh->response_topic : "", inst->response_topic, bad);
        return -1;
    }
    return 0;
}

/* 0, or -1 (the message's fault) / -2 (no memory) with the reason in err. */
static int mqtt_shape_fill(const mqtt_inst *inst, const obx_message *m, mqtt_shape *sh, char *err,
                           size_t err_size)
{
    sh->count = 0;
    sh->ce.json = NULL;
    sh->body = m->payload;
    sh->body_len = m->payload_len;
    if (mqtt_shape_props(inst, m, sh, err, err_size) != 0)
        return -1;
    if (inst->ce.mode != OBX_CE_OFF) {
        int rc = obx_ce_fill(&sh->ce, &inst->ce, inst->host, m, OBX_CE_MQTT, err, err_size);
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < sh->ce.count; i++)
            sh->field[sh->count++] = sh->ce.attr[i];
        sh->body = sh->ce.body;
        sh->body_len = sh->ce.body_len;
        sh->ct = sh->ce.content_type;
        return 0;
    }
    obx_envelope_fill_host(&sh->env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    for (size_t i = 0; i < sh->env.count; i++) {
        sh->field[sh->count].name = sh->env.field[i].name;
        sh->field[sh->count++].value = sh->env.field[i].value;
    }
    return 0;
}

static void mqtt_shape_free(mqtt_shape *sh)
{
    obx_ce_event_free(&sh->ce);
}

/* The message is shaped (envelope or CloudEvent, templates) once, for the
 * checks and the copy both. */
const char *mqtt_item_make(const mqtt_inst *inst, const obx_message *m, uint64_t agg,
                           mqtt_item **out)
{
    mqtt_shape sh;
    int nomem = 0;
    sh.ce.json = NULL;
    *out = NULL;
    const char *why = mqtt_shape_problem(inst, m, &sh, &nomem);
    if (!why && !nomem && (*out = mqtt_item_shaped(inst, m, &sh)) != NULL)
        (*out)->agg = agg;
    mqtt_shape_free(&sh);
    return why;
}

static const char *mqtt_shape_problem(const mqtt_inst *inst, const obx_message *m, mqtt_shape *sh,
                                      int *nomem)
{
    static __thread char why[MQTT_DETAIL_MAX];
    const char *tp = mqtt_topic_problem(m->destination);
    if (tp)
        return tp;
    /* a non-UTF-8 string would make the broker drop the connection for everyone */
    size_t props = 0;
    int rc = mqtt_shape_fill(inst, m, sh, why, sizeof why);
    if (rc == -2) {
        *nomem = 1; /* retriable */
        return NULL;
    }
    if (rc != 0)
        return why;
    for (size_t i = 0; i < sh->count; i++) {
        if (!mqtt_header_ok(sh->field[i].value))
            return "invalid header: an event field is not valid UTF-8 or has control characters";
        props += 1 + 2 + strlen(sh->field[i].name) + 2 + strlen(sh->field[i].value);
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
    const char *ct = sh->ct;
    size_t body_len = sh->body_len;
    if (ct && !mqtt_header_ok(ct))
        return "invalid content type: not valid UTF-8, has control characters or is too long";
    props += ct ? 1 + 2 + strlen(ct) : 0;
    props += sh->response_topic ? 1 + 2 + strlen(sh->response_topic) : 0;
    props += sh->correlation_data ? 1 + 2 + strlen(sh->correlation_data) : 0;
    props += inst->message_expiry_s > 0 ? 5 : 0;
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

static mqtt_item *mqtt_item_shaped(const mqtt_inst *inst, const obx_message *m,
                                   const mqtt_shape *sh)
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
