/*
 * CloudEvents 1.0 for drivers: an output with `format = "cloudevents"`
 * sends each event as a CloudEvent. This header maps a message to the
 * attributes once; a driver only puts them where its protocol binding says
 * (OBX_CE_KAFKA: "ce_" headers, OBX_CE_AMQP: "cloudEvents_" application
 * properties, OBX_CE_MQTT: MQTT 5 user properties, OBX_CE_HTTP: "ce-"
 * headers) and the content type in the protocol's own place.
 *
 *   id = event_id, type = ce_type (default: the event type), source =
 *   ce_source (default "/outbox-relay/${aggregate_type}"), subject = ce_subject
 *   (none by default), time = created_at (RFC 3339, UTC, microseconds),
 *   datacontenttype = the payload's content type; extensions aggregatetype,
 *   aggregateid, aggregateseq and eventversion (when known).
 *
 * Binary mode (default): the payload unchanged, the attributes beside it.
 * Structured mode (`ce_mode = "structured"`): the body is one JSON object,
 * content type application/cloudevents+json, the payload in "data" (JSON)
 * or "data_base64" (anything else).
 *
 * Templates: text with ${event_id}, ${event_type}, ${aggregate_type},
 * ${aggregate_id} or ${destination} (the destination the route rendered).
 * Any other ${...} is refused at load, with the config file and line (the
 * config reader takes it for an environment variable, which must be set;
 * the host checks again with obx_ce_template_check).
 *
 * Header-only, C99 and standard headers; compiles as C++ (the option macros
 * are for C drivers). Ownership: an obx_ce_event is the caller's; its names
 * and values point into it, the message (valid during publish_batch) or
 * static strings; obx_ce_event_free releases the structured body.
 * Threading: no global state; any thread.
 */
#ifndef OBX_CLOUDEVENTS_H
#define OBX_CLOUDEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obx/driver.h"
#include "obx/driver_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The protocol binding: decides only the attributes' names. */
typedef enum obx_ce_binding {
    OBX_CE_KAFKA = 0, /**< "ce_id" ... Kafka headers */
    OBX_CE_AMQP = 1,  /**< "cloudEvents_id" ... AMQP application properties (headers table) */
    OBX_CE_MQTT = 2,  /**< "id" ... MQTT 5 user properties */
    OBX_CE_HTTP = 3   /**< "ce-id" ... HTTP headers */
} obx_ce_binding;

typedef enum obx_ce_mode {
    OBX_CE_OFF = 0,       /**< format = "plain": the relay's own headers */
    OBX_CE_BINARY = 1,    /**< attributes in headers, the payload as the body */
    OBX_CE_STRUCTURED = 2 /**< one application/cloudevents+json body */
} obx_ce_mode;

/* The options every CloudEvents-capable driver declares, in this order, at
 * the end of its option array, with OBX_CE_OPTION_SPECS at the same place
 * of its spec array. */
/* clang-format off */
#define OBX_CE_OPTIONS \
    {"format", OBX_OPT_STRING, 0, \
     "\"plain\" (the relay's headers) or \"cloudevents\" (CloudEvents 1.0 attributes)"}, \
    {"ce_mode", OBX_OPT_STRING, 0, \
     "CloudEvents content mode: \"binary\" (attributes as headers) or \"structured\""}, \
    {"ce_source", OBX_OPT_STRING, 0, "CloudEvents source template, e.g. /orders/${aggregate_type}"}, \
    {"ce_type", OBX_OPT_STRING, 0, "CloudEvents type template, e.g. com.example.${event_type}"}, \
    {"ce_subject", OBX_OPT_STRING, 0, "CloudEvents subject template, e.g. ${aggregate_id}"}
#define OBX_CE_OPTION_SPECS \
    {"plain", 0, 0, (const char *const[]){"plain", "cloudevents", NULL}, NULL}, \
    {"binary", 0, 0, (const char *const[]){"binary", "structured", NULL}, NULL}, \
    {"/outbox-relay/${aggregate_type}", 0, 0, NULL, NULL}, \
    {"${event_type}", 0, 0, NULL, NULL}, \
    {NULL, 0, 0, NULL, NULL}
/* clang-format on */
/** The options whose values are templates (the host checks them at load). */
#define OBX_CE_TEMPLATE_OPTIONS                                                                    \
    {                                                                                              \
        "ce_source", "ce_type", "ce_subject"                                                       \
    }

/** An output's CloudEvents settings, read once in create. */
typedef struct obx_ce_config {
    obx_ce_mode mode;
    const char *source, *type, *subject; /* templates; subject NULL: none */
} obx_ce_config;

/** Reads the options above (host-owned strings); a host without them reads as plain. */
static inline void obx_ce_config_read(const obx_host *host, obx_ce_config *cfg)
{
    const char *format = "plain", *mode = "binary";
    void *ctx = host->host_ctx;
    cfg->source = "/outbox-relay/${aggregate_type}";
    cfg->type = "${event_type}";
    cfg->subject = NULL;
    host->get_string(ctx, "format", &format);
    host->get_string(ctx, "ce_mode", &mode);
    host->get_string(ctx, "ce_source", &cfg->source);
    host->get_string(ctx, "ce_type", &cfg->type);
    host->get_string(ctx, "ce_subject", &cfg->subject);
    cfg->mode = strcmp(format, "cloudevents") != 0 ? OBX_CE_OFF
                : strcmp(mode, "structured") == 0  ? OBX_CE_STRUCTURED
                                                   : OBX_CE_BINARY;
}

/* The placeholder at p (just after "${", ending at '}'), as an index of the
 * message's texts, or -1. */
static inline int obx_ce_placeholder(const char *p, size_t len)
{
    static const char *const names[] = {"event_id", "event_type", "aggregate_type", "aggregate_id",
                                        "destination"};
    for (int i = 0; i < 5; i++)
        if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0)
            return i;
    return -1;
}

/**
 * 0 when every ${...} of tpl is known; else -1 with the reason in why
 * ("unknown placeholder ${x}", "unclosed ${").
 */
static inline int obx_ce_template_check(const char *tpl, char *why, size_t why_size)
{
    for (const char *p = tpl; (p = strchr(p, '$')) != NULL;) {
        if (p[1] != '{') {
            p++;
            continue;
        }
        const char *end = strchr(p + 2, '}');
        if (!end)
            return snprintf(why, why_size, "unclosed \"${\" in \"%.64s\"", tpl), -1;
        if (obx_ce_placeholder(p + 2, (size_t)(end - p - 2)) < 0)
            return snprintf(why, why_size,
                            "unknown placeholder ${%.*s} (known: ${event_id}, ${event_type}, "
                            "${aggregate_type}, ${aggregate_id}, ${destination})",
                            (int)(end - p - 2 > 64 ? 64 : end - p - 2), p + 2),
                   -1;
        p = end + 1;
    }
    return 0;
}

/**
 * Writes tpl with the message's fields into buf; returns the length, or -1
 * when it does not fit (buf then holds a truncated text). An unknown
 * placeholder (the host refuses those at load) is copied as written.
 */
static inline int obx_ce_expand(const char *tpl, const obx_message *m, char *buf, size_t size)
{
    const char *value[5] = {m->event_id, m->event_type, m->aggregate_type, m->aggregate_id,
                            m->destination};
    size_t n = 0;
    int fits = 1;
    for (const char *p = tpl; *p;) {
        const char *piece = p;
        size_t len = 1;
        const char *end = p[0] == '$' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
        int k = end ? obx_ce_placeholder(p + 2, (size_t)(end - p - 2)) : -1;
        if (k >= 0) {
            piece = value[k] ? value[k] : "";
            len = strlen(piece);
            p = end + 1;
        } else {
            p++;
        }
        if (n + len >= size) {
            fits = 0;
            len = size > n + 1 ? size - n - 1 : 0;
        }
        memcpy(buf + n, piece, len);
        n += len;
    }
    if (size)
        buf[n < size ? n : size - 1] = '\0';
    return fits ? (int)n : -1;
}

/* The attributes, in the order they are listed. */
enum {
    OBX_CE_A_SPECVERSION,
    OBX_CE_A_ID,
    OBX_CE_A_SOURCE,
    OBX_CE_A_TYPE,
    OBX_CE_A_TIME,
    OBX_CE_A_SUBJECT,
    OBX_CE_A_AGGREGATETYPE,
    OBX_CE_A_AGGREGATEID,
    OBX_CE_A_AGGREGATESEQ,
    OBX_CE_A_EVENTVERSION,
    OBX_CE_A_COUNT
};

/** The name of attribute `attr` (e.g. "time", "aggregateseq") in a binding. */
static inline const char *obx_ce_name(int attr, obx_ce_binding b)
{
    static const char *const names[4][OBX_CE_A_COUNT] = {
        {"ce_specversion", "ce_id", "ce_source", "ce_type", "ce_time", "ce_subject",
         "ce_aggregatetype", "ce_aggregateid", "ce_aggregateseq", "ce_eventversion"},
        {"cloudEvents_specversion", "cloudEvents_id", "cloudEvents_source", "cloudEvents_type",
         "cloudEvents_time", "cloudEvents_subject", "cloudEvents_aggregatetype",
         "cloudEvents_aggregateid", "cloudEvents_aggregateseq", "cloudEvents_eventversion"},
        {"specversion", "id", "source", "type", "time", "subject", "aggregatetype", "aggregateid",
         "aggregateseq", "eventversion"},
        {"ce-specversion", "ce-id", "ce-source", "ce-type", "ce-time", "ce-subject",
         "ce-aggregatetype", "ce-aggregateid", "ce-aggregateseq", "ce-eventversion"},
    };
    if (attr < 0 || attr >= OBX_CE_A_COUNT)
        return NULL;
    return names[(unsigned)b <= OBX_CE_HTTP ? (unsigned)b : 0u][attr];
}

/** One attribute: its name in the binding and its value. */
typedef struct obx_ce_attr {
    const char *name;
    const char *value;
} obx_ce_attr;

#define OBX_CE_TEXT_MAX 1024 /* an expanded source, type or subject, NUL included */

/** One message as a CloudEvent, filled by obx_ce_fill. */
typedef struct obx_ce_event {
    /* binary mode: the attributes to send, in the binding's names; structured: none */
    size_t count;
    obx_ce_attr attr[OBX_CE_A_COUNT];
    /* the protocol's content type: the payload's (binary) or application/cloudevents+json */
    const char *content_type;
    /* the body to send: the payload (binary) or the JSON object (structured, malloc'd) */
    const void *body;
    size_t body_len;
    char *json;
    char time[48], seq[24];
    char text[3][OBX_CE_TEXT_MAX];
} obx_ce_event;

/* A growing text for the structured body; on failure len stays and ok = 0. */
typedef struct obx_ce_buf {
    char *p;
    size_t len, cap;
    int ok;
} obx_ce_buf;

static inline void obx_ce_put(obx_ce_buf *b, const char *s, size_t n)
{
    if (!b->ok)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = (char *)realloc(b->p, cap);
        if (!grown) {
            b->ok = 0;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* A JSON string of valid UTF-8 text s. */
static inline void obx_ce_put_string(obx_ce_buf *b, const char *s)
{
    obx_ce_put(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            obx_ce_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            obx_ce_put(b, esc, 6);
        } else {
            obx_ce_put(b, p, 1);
        }
    }
    obx_ce_put(b, "\"", 1);
}

static inline void obx_ce_put_base64(obx_ce_buf *b, const unsigned char *s, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    obx_ce_put(b, "\"", 1);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0u) |
                     (i + 2 < n ? (unsigned)s[i + 2] : 0u);
        char q[4] = {abc[v >> 18 & 63], abc[v >> 12 & 63], i + 1 < n ? abc[v >> 6 & 63] : '=',
                     i + 2 < n ? abc[v & 63] : '='};
        obx_ce_put(b, q, 4);
    }
    obx_ce_put(b, "\"", 1);
}

/** Is this content type JSON (application/json, or any +json suffix)? */
static inline int obx_ce_is_json(const char *ct)
{
    size_t n = strcspn(ct, ";");
    while (n && ct[n - 1] == ' ')
        n--;
    return (n == 16 && strncmp(ct, "application/json", 16) == 0) ||
           (n > 5 && strncmp(ct + n - 5, "+json", 5) == 0);
}

/* The structured body: every attribute by its own name, then the data. */
static inline int obx_ce_structured(obx_ce_event *ce, const obx_message *m, const char *ct,
                                    const char *const *value)
{
    obx_ce_buf b = {NULL, 0, 0, 1};
    obx_ce_put(&b, "{", 1);
    for (int a = 0; a < OBX_CE_A_COUNT; a++) {
        if (!value[a])
            continue;
        obx_ce_put(&b, b.len > 1 ? "," : "", b.len > 1 ? 1 : 0);
        obx_ce_put_string(&b, obx_ce_name(a, OBX_CE_MQTT));
        obx_ce_put(&b, ":", 1);
        obx_ce_put_string(&b, value[a]);
    }
    obx_ce_put(&b, ",\"datacontenttype\":", 19);
    obx_ce_put_string(&b, ct);
    if (m->payload_len && obx_ce_is_json(ct)) { /* jsonb text: a JSON value as it is */
        obx_ce_put(&b, ",\"data\":", 8);
        obx_ce_put(&b, (const char *)m->payload, m->payload_len);
    } else if (m->payload_len) {
        obx_ce_put(&b, ",\"data_base64\":", 15);
        obx_ce_put_base64(&b, (const unsigned char *)m->payload, m->payload_len);
    }
    obx_ce_put(&b, "}", 1);
    if (!b.ok) {
        free(b.p);
        return -1;
    }
    ce->json = b.p;
    ce->body = b.p;
    ce->body_len = b.len;
    ce->content_type = "application/cloudevents+json";
    return 0;
}

/**
 * Maps m to a CloudEvent under cfg (mode not OFF) in binding b. Inside
 * publish_batch, m pointing into the array it received (the aggregate's
 * sequence and the event version come through host->message_ext; host may
 * be NULL). Returns 0; or, with the reason in err, -1 for a template
 * expanding past OBX_CE_TEXT_MAX (the message's fault: refuse it PERMANENT)
 * or -2 for no memory for the structured body (RETRIABLE).
 */
static inline int obx_ce_fill(obx_ce_event *ce, const obx_ce_config *cfg, const obx_host *host,
                              const obx_message *m, obx_ce_binding b, char *err, size_t err_size)
{
    const char *value[OBX_CE_A_COUNT] = {NULL};
    const char *tpl[3] = {cfg->source, cfg->type, cfg->subject};
    const char *const tpl_name[3] = {"ce_source", "ce_type", "ce_subject"};
    ce->count = 0;
    ce->json = NULL;
    for (int i = 0; i < 3; i++)
        if (tpl[i] && obx_ce_expand(tpl[i], m, ce->text[i], sizeof ce->text[i]) < 0)
            return snprintf(err, err_size, "%s expands to %d bytes or more", tpl_name[i],
                            OBX_CE_TEXT_MAX),
                   -1;
    obx_format_time(m->created_at_us, ce->time, sizeof ce->time);
    value[OBX_CE_A_SPECVERSION] = "1.0";
    value[OBX_CE_A_ID] = m->event_id ? m->event_id : "";
    value[OBX_CE_A_SOURCE] = ce->text[0];
    value[OBX_CE_A_TYPE] = ce->text[1];
    value[OBX_CE_A_TIME] = ce->time;
    value[OBX_CE_A_SUBJECT] = tpl[2] && ce->text[2][0] ? ce->text[2] : NULL;
    value[OBX_CE_A_AGGREGATETYPE] = m->aggregate_type;
    value[OBX_CE_A_AGGREGATEID] = m->aggregate_id;
    const obx_message_ext *x =
        host && OBX_HOST_HAS(host, message_ext) ? host->message_ext(host->host_ctx, m) : NULL;
    if (x && x->struct_size >= offsetof(obx_message_ext, aggregate_seq) + sizeof x->aggregate_seq &&
        x->aggregate_seq > 0) {
        snprintf(ce->seq, sizeof ce->seq, "%lld", (long long)x->aggregate_seq);
        value[OBX_CE_A_AGGREGATESEQ] = ce->seq;
    }
    if (x && x->struct_size >= offsetof(obx_message_ext, event_version) + sizeof x->event_version)
        value[OBX_CE_A_EVENTVERSION] = x->event_version;
    const char *ct = m->content_type ? m->content_type : "application/octet-stream";
    if (cfg->mode == OBX_CE_STRUCTURED)
        return obx_ce_structured(ce, m, ct, value) < 0
                   ? (snprintf(err, err_size, "out of memory"), -2)
                   : 0;
    for (int a = 0; a < OBX_CE_A_COUNT; a++)
        if (value[a]) {
            ce->attr[ce->count].name = obx_ce_name(a, b);
            ce->attr[ce->count++].value = value[a];
        }
    ce->content_type = ct;
    ce->body = m->payload;
    ce->body_len = m->payload_len;
    return 0;
}

/** Releases what obx_ce_fill allocated (the structured body); the event may be filled again. */
static inline void obx_ce_event_free(obx_ce_event *ce)
{
    free(ce->json);
    ce->json = NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* OBX_CLOUDEVENTS_H */
