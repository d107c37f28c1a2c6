/* Routing: the first route whose globs match, and its destination template
 * rendered with the message's fields. */
#include "event/route.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does msg carry every header r names, each with a value its glob matches?
 * A header given twice: its first value counts. */
static int headers_match(const cfg_route *r, const obx_message *msg)
{
    for (size_t i = 0; i < r->header_count; i++) {
        const obx_header *h = msg->headers, *end = msg->headers + msg->header_count;
        while (h < end && strcmp(h->key, r->headers[i].name) != 0)
            h++;
        if (h == end || fnmatch(r->headers[i].glob, h->value, 0) != 0)
            return 0;
    }
    return 1;
}

const cfg_route *route_for(const relay_config *cfg, const obx_message *msg)
{
    for (size_t i = 0; i < cfg->route_count; i++) {
        const cfg_route *r = &cfg->routes[i];
        if (fnmatch(r->event_type, msg->event_type, 0) == 0 &&
            fnmatch(r->aggregate_type, msg->aggregate_type, 0) == 0 && headers_match(r, msg))
            return r;
    }
    return NULL;
}

static const char *field(const obx_message *msg, const char *name, size_t len)
{
#define FIELD(f)                                                                                   \
    if (len == strlen(#f) && strncmp(name, #f, len) == 0)                                          \
        return msg->f;
    FIELD(event_type)
    FIELD(aggregate_type)
    FIELD(aggregate_id)
    FIELD(event_id)
#undef FIELD
    return NULL;
}

int route_render(const char *tmpl, const obx_message *msg, arena *a, const char **out, char *err,
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

static int dropped(const cfg_route *r, const char *name)
{
    for (size_t i = 0; i < r->shape_count; i++)
        if (r->shape[i].kind == HEADER_DROP && fnmatch(r->shape[i].name, name, 0) == 0)
            return 1;
    return 0;
}

static const char *renamed(const cfg_route *r, const char *name)
{
    for (size_t i = 0; i < r->shape_count; i++)
        if (r->shape[i].kind == HEADER_RENAME && strcmp(r->shape[i].name, name) == 0)
            return r->shape[i].value;
    return name;
}

int route_shape_headers(const cfg_route *r, obx_message *msg, arena *a, char *err, size_t err_size)
{
    if (!r->shape_count)
        return 0;
    obx_header *out = arena_alloc(a, (msg->header_count + r->shape_count) * sizeof *out);
    size_t n = 0;
    for (size_t i = 0; i < msg->header_count; i++)
        if (!dropped(r, msg->headers[i].key))
            out[n++] = (obx_header){renamed(r, msg->headers[i].key), msg->headers[i].value};
    for (size_t i = 0; i < r->shape_count; i++) {
        const cfg_header_rule *rule = &r->shape[i];
        if (rule->kind != HEADER_SET)
            continue;
        const char *value;
        char why[256];
        if (route_render(rule->value, msg, a, &value, why, sizeof why) < 0)
            return snprintf(err, err_size, "set_headers %s: %s", rule->name, why), -1;
        size_t k = 0, kept = 0; /* the set value replaces every header of that name */
        for (; k < n; k++)
            if (strcmp(out[k].key, rule->name) != 0)
                out[kept++] = out[k];
        n = kept;
        out[n++] = (obx_header){rule->name, value};
    }
    msg->headers = out;
    msg->header_count = n;
    return 0;
}
