/* One message to one HTTP request: the URL, the headers, the signature. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "obx/driver_util.h"
#include "obx/envelope.h"
#include "wh.h"
#include "wh_sign.h"

/* Adds "prefix+name: value"; NULL removes a header curl would add. curl drops
 * "name: " whose value is empty or blank, so such a value goes as "name;",
 * which curl sends as "name:": an empty value, which is what a blank one is
 * to HTTP (a field value excludes leading and trailing whitespace). A line
 * break in a value would let row data forge headers: such a message can
 * never be sent. */
static obx_status wh_header(struct curl_slist **list, const char *prefix, const char *name,
                            const char *value, char *err, size_t err_size)
{
    char line[4096];
    int blank = value && !value[strspn(value, " \t\v\f")];
    int n = snprintf(line, sizeof line,
                     !value  ? "%s%s:%s"
                     : blank ? "%s%s;%s"
                             : "%s%s: %s",
                     prefix, name, blank || !value ? "" : value);
    if (n < 0 || (size_t)n >= sizeof line || (value && strpbrk(value, "\r\n")))
        return snprintf(err, err_size, "header %s%.64s: a line break in the value, or too long",
                        prefix, name),
               OBX_PERMANENT;
    struct curl_slist *l = curl_slist_append(*list, line);
    if (!l)
        return snprintf(err, err_size, "out of memory"), OBX_RETRIABLE;
    *list = l;
    return OBX_OK;
}

/* A destination whose "/"-separated parts include "." or "..": as a path it
 * would leave url's directory, and receivers that decode %2F before routing
 * would see it so even encoded. */
static int wh_dot_segment(const char *dest)
{
    for (const char *p = dest;;) {
        size_t n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 1;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* Writes url, then with append_destination "/" and the destination as one
 * segment: every byte but the unreserved ones percent-encoded ("/" too). */
static obx_status wh_url(const obx_instance *inst, const char *dest, char *u, char *err,
                         size_t err_size)
{
    u = stpcpy(u, inst->url);
    if (!inst->append_destination)
        return OBX_OK;
    if (wh_dot_segment(dest))
        return snprintf(err, err_size,
                        "destination \"%.64s\" has a \".\" or \"..\" segment: refused as a path",
                        dest),
               OBX_PERMANENT;
    if (u[-1] != '/')
        *u++ = '/';
    for (const unsigned char *c = (const unsigned char *)dest; *c; c++)
        u += isalnum(*c) || strchr("-._~", *c) ? (*u = (char)*c, 1) : sprintf(u, "%%%02X", *c);
    return OBX_OK;
}

static obx_status wh_sign(const obx_instance *inst, wh_req *r, char *err, size_t err_size)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    char sig[16 + 2 * EVP_MAX_MD_SIZE] = "sha256=";
    HMAC(EVP_sha256(), inst->secret, (int)inst->secret_len, (unsigned char *)r->data, r->body_len,
         md, &md_len);
    if (!md_len)
        return snprintf(err, err_size, "HMAC-SHA256 failed"), OBX_RETRIABLE;
    for (unsigned i = 0; i < md_len; i++)
        sprintf(sig + 7 + 2 * i, "%02x", md[i]);
    return wh_header(&r->headers, "", "X-Signature", sig, err, err_size);
}

/* Standard Webhooks: the event id (stable across retries), the time of
 * sending, and the signature over both and the body. */
static obx_status wh_sign_std(const obx_instance *inst, const obx_message *m, wh_req *r, char *err,
                              size_t err_size)
{
    char ts[24], sig[WH_STD_SIG_SIZE];
    long long now = (long long)time(NULL);
    snprintf(ts, sizeof ts, "%lld", now);
    if (wh_std_sign(inst->sign_key, inst->sign_key_len, m->event_id, now, r->data, r->body_len, sig,
                    sizeof sig) != 0)
        return snprintf(err, err_size, "webhook-signature failed"), OBX_RETRIABLE;
    obx_status st = wh_header(&r->headers, "", "webhook-id", m->event_id, err, err_size);
    if (st == OBX_OK)
        st = wh_header(&r->headers, "", "webhook-timestamp", ts, err, err_size);
    return st == OBX_OK ? wh_header(&r->headers, "", "webhook-signature", sig, err, err_size) : st;
}

/* The relay's own X-* fields, or the CloudEvents attributes in binary mode. */
static obx_status wh_fields(obx_instance *inst, const obx_message *m, const obx_ce_event *ce,
                            wh_req *r, char *err, size_t err_size)
{
    obx_envelope env = {0};
    if (inst->ce.mode == OBX_CE_OFF)
        obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_HTTP, OBX_ENVELOPE_STANDARD);
    const char *ct = inst->ce.mode != OBX_CE_OFF ? ce->content_type
                     : m->content_type           ? m->content_type
                                                 : "application/octet-stream";
    obx_status st = wh_header(&r->headers, "", "Content-Type", ct, err, err_size);
    for (size_t i = 0; i < env.count && st == OBX_OK; i++)
        st = wh_header(&r->headers, "", env.field[i].name, env.field[i].value, err, err_size);
    for (size_t i = 0; i < ce->count && st == OBX_OK; i++)
        st = wh_header(&r->headers, "", ce->attr[i].name, ce->attr[i].value, err, err_size);
    return st;
}

/* A W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lowercase, ids not all zero. */
static int valid_traceparent(const char *v)
{
    static const char shape[] = "vv-tttttttttttttttttttttttttttttttt-pppppppppppppppp-ff";
    if (strlen(v) != sizeof shape - 1 || strncmp(v, "ff", 2) == 0)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == '-' ? v[i] != '-' : !strchr("0123456789abcdef", v[i]) || !v[i])
            return 0;
    return strspn(v + 3, "0") < 32 && strspn(v + 36, "0") < 16;
}

/* The row's trace context also under the names W3C Trace Context gives
 * HTTP (X-Header-traceparent stays): tracestate only beside a valid
 * traceparent, a malformed traceparent not at all (it would break the
 * receiver's trace rather than continue it). */
static obx_status trace_context(const obx_message *m, wh_req *r, char *err, size_t err_size)
{
    const char *parent = NULL, *state = NULL;
    for (size_t i = 0; i < m->header_count; i++) {
        if (!parent && !strcmp(m->headers[i].key, "traceparent"))
            parent = m->headers[i].value;
        else if (!state && !strcmp(m->headers[i].key, "tracestate"))
            state = m->headers[i].value;
    }
    if (!parent || !valid_traceparent(parent))
        return OBX_OK;
    obx_status st = wh_header(&r->headers, "", "traceparent", parent, err, err_size);
    if (st == OBX_OK && state && *state)
        st = wh_header(&r->headers, "", "tracestate", state, err, err_size);
    return st;
}

obx_status wh_build(obx_instance *inst, const obx_message *m, wh_req **out, char *err,
                    size_t err_size)
{
    static const char tchar[] =
        "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *dest = WH_STR(m->destination);
    obx_ce_event ce = {0};
    ce.body = m->payload;
    ce.body_len = m->payload_len;
    int ce_rc = inst->ce.mode != OBX_CE_OFF
                    ? obx_ce_fill(&ce, &inst->ce, inst->host, m, OBX_CE_HTTP, err, err_size)
                    : 0;
    if (ce_rc != 0)
        return ce_rc == -2 ? OBX_RETRIABLE : OBX_PERMANENT;
    wh_req *r = *out =
        calloc(1, sizeof *r + ce.body_len + strlen(inst->url) + 2 + 3 * strlen(dest));
    if (!r)
        return obx_ce_event_free(&ce), snprintf(err, err_size, "out of memory"), OBX_RETRIABLE;
    r->token = m->token;
    r->body_len = ce.body_len;
    memcpy(r->data, ce.body ? ce.body : "", ce.body_len);
    obx_status st = wh_url(inst, dest, r->url = r->data + ce.body_len, err, err_size);
    if (st == OBX_OK)
        st = wh_fields(inst, m, &ce, r, err, err_size);
    obx_ce_event_free(&ce);
    const char *fixed[][2] = {
        {"X-Outbox-Destination", dest},
        {"Expect", NULL}, /* no 100-continue round trip before bodies over 1 KiB */
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && st == OBX_OK; i++)
        st = wh_header(&r->headers, "", fixed[i][0], fixed[i][1], err, err_size);
    for (size_t i = 0; i < m->header_count && st == OBX_OK; i++) {
        const char *k = m->headers[i].key, *v = m->headers[i].value;
        if (!*k || k[strspn(k, tchar)])
            return snprintf(err, err_size, "header \"%.64s\" is not an HTTP token", k),
                   OBX_PERMANENT;
        st = wh_header(&r->headers, "X-Header-", k, v ? v : "", err, err_size);
    }
    if (st == OBX_OK)
        st = trace_context(m, r, err, err_size);
    if (inst->secret && st == OBX_OK)
        st = wh_sign(inst, r, err, err_size);
    if (inst->sign_key_len && st == OBX_OK)
        st = wh_sign_std(inst, m, r, err, err_size);
    return st;
}

void wh_req_free(wh_req *r)
{
    if (!r)
        return;
    curl_slist_free_all(r->headers);
    free(r);
}
