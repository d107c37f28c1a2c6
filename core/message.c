#include "message.h"

#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queries.h"

#define ARENA_BLOCK (64 * 1024)

struct arena_block {
    struct arena_block *next;
    size_t used, size;
    max_align_t data[];
};

void *arena_alloc(arena *a, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        b->next = a->head;
        b->used = 0;
        b->size = cap;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

/* Keeps the newest block for the next batch, frees the rest. */
void arena_reset(arena *a)
{
    if (!a->head)
        return;
    struct arena_block *b = a->head->next;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head->next = NULL;
    a->head->used = 0;
}

void arena_free(arena *a)
{
    arena_reset(a);
    free(a->head);
    a->head = NULL;
}

static char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static const char *field(const obx_message *msg, const char *name, size_t len)
{
#define FIELD(f)                                                                                   \
    if (len == strlen(#f) && strncmp(name, #f, len) == 0)                                          \
        return msg->f;
    FIELD(event_type)
    FIELD(aggregate_type) FIELD(aggregate_id) FIELD(event_id)
#undef FIELD
        return NULL;
}

int message_render(const char *tmpl, const obx_message *msg, arena *a, const char **out, char *err,
                   size_t err_size)
{
    if (!strstr(tmpl, "${")) {
        *out = tmpl;
        return 0;
    }
    size_t len = 0, cap = strlen(tmpl) + 256;
    char *buf = malloc(cap);
    for (const char *p = tmpl; *p;) {
        const char *piece = p, *end = NULL;
        size_t n = 1;
        if (p[0] == '$' && p[1] == '{' && (end = strchr(p, '}'))) {
            piece = field(msg, p + 2, end - p - 2);
            if (!piece || !*piece) {
                snprintf(err, err_size, "destination template \"%s\" names %.*s, which is %s", tmpl,
                         (int)(end - p - 2), p + 2, piece ? "empty" : "NULL or unknown");
                free(buf);
                return -1;
            }
            n = strlen(piece);
        }
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, piece, n);
        len += n;
        p = end ? end + 1 : p + 1;
    }
    *out = arena_strndup(a, buf, len);
    free(buf);
    return 0;
}

/* The headers column: a JSON object; scalar values are passed as text. */
static int parse_headers(const char *text, arena *a, obx_message *msg, char *err, size_t err_size)
{
    json_error_t jerr;
    json_t *obj = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!obj || !json_is_object(obj)) {
        snprintf(err, err_size, "headers must be a JSON object of strings%s%s", obj ? "" : ": ",
                 obj ? "" : jerr.text);
        json_decref(obj);
        return -1;
    }
    size_t count = json_object_size(obj), i = 0;
    obx_header *h = arena_alloc(a, (count ? count : 1) * sizeof *h);
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        char *v = NULL;
        if (json_is_string(value))
            h[i].value = arena_strndup(a, json_string_value(value), json_string_length(value));
        else if (json_is_number(value) || json_is_boolean(value)) {
            v = json_dumps(value, JSON_ENCODE_ANY);
            h[i].value = arena_strndup(a, v, strlen(v));
            free(v);
        } else {
            snprintf(err, err_size, "header \"%s\" must be a string, number or boolean", key);
            json_decref(obj);
            return -1;
        }
        h[i++].key = arena_strndup(a, key, strlen(key));
    }
    json_decref(obj);
    msg->headers = h;
    msg->header_count = count;
    return 0;
}

static const cfg_route *route_for(const relay_config *cfg, const obx_message *msg)
{
    for (size_t i = 0; i < cfg->route_count; i++) {
        const cfg_route *r = &cfg->routes[i];
        if (fnmatch(r->event_type, msg->event_type, 0) == 0 &&
            fnmatch(r->aggregate_type, msg->aggregate_type, 0) == 0)
            return r;
    }
    return NULL;
}

static const char *value_or_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

int message_build(const relay_config *cfg, payload_kind kind, const PGresult *res, int row,
                  arena *a, obx_message *msg, size_t *output, char *err, size_t err_size)
{
    memset(msg, 0, sizeof *msg);
    msg->event_id = value_or_null(res, row, ROW_EVENT_ID);
    msg->event_type = value_or_null(res, row, ROW_EVENT_TYPE);
    msg->aggregate_type = value_or_null(res, row, ROW_AGGREGATE_TYPE);
    msg->aggregate_id = value_or_null(res, row, ROW_AGGREGATE_ID);
    msg->created_at_us = strtoll(PQgetvalue(res, row, ROW_CREATED_US), NULL, 10);
    msg->attempt = (uint32_t)strtoul(PQgetvalue(res, row, ROW_ATTEMPTS), NULL, 10) + 1;
    if (!msg->event_id || !msg->event_type || !msg->aggregate_type || !msg->aggregate_id) {
        snprintf(err, err_size,
                 "event_id, event_type, aggregate_type and aggregate_id must not be NULL");
        return -1;
    }
    const char *payload = value_or_null(res, row, ROW_PAYLOAD);
    if (!payload) {
        snprintf(err, err_size, "payload is NULL");
        return -1;
    }
    size_t len = PQgetlength(res, row, ROW_PAYLOAD);
    if (kind == PAYLOAD_BYTES) { /* bytea arrives as \x hex text */
        unsigned char *raw = PQunescapeBytea((const unsigned char *)payload, &len);
        if (!raw) {
            snprintf(err, err_size, "payload: cannot decode bytea");
            return -1;
        }
        void *copy = arena_alloc(a, len ? len : 1);
        memcpy(copy, raw, len);
        PQfreemem(raw);
        payload = copy;
    } else if (kind == PAYLOAD_TEXT) {
        json_error_t jerr;
        json_t *j = json_loadb(payload, len, JSON_DECODE_ANY, &jerr);
        if (!j) {
            snprintf(err, err_size, "payload is not valid JSON: %s (line %d)", jerr.text,
                     jerr.line);
            return -1;
        }
        json_decref(j);
    }
    if (len > (size_t)cfg->max_payload_bytes) {
        snprintf(err, err_size, "payload of %zu bytes exceeds max_payload_bytes (%d)", len,
                 cfg->max_payload_bytes);
        return -1;
    }
    msg->payload = payload;
    msg->payload_len = len;
    msg->content_type = kind == PAYLOAD_BYTES ? "application/octet-stream" : "application/json";
    const char *headers = value_or_null(res, row, ROW_HEADERS);
    if (headers && parse_headers(headers, a, msg, err, err_size) < 0)
        return -1;
    const cfg_route *route = route_for(cfg, msg);
    if (!route) {
        snprintf(err, err_size, "no route matches event_type \"%s\", aggregate_type \"%s\"",
                 msg->event_type, msg->aggregate_type);
        return -1;
    }
    *output = route->output_index;
    const char *override = value_or_null(res, row, ROW_DESTINATION);
    if (override && *override) {
        msg->destination = override;
        return 0;
    }
    if (message_render(route->destination, msg, a, &msg->destination, err, err_size) < 0)
        return -1;
    if (!*msg->destination) {
        snprintf(err, err_size, "destination is empty (route at %s:%d)", cfg->path, route->line);
        return -1;
    }
    return 0;
}
