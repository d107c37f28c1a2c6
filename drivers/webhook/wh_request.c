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

obx_status wh_build(obx_instance *inst, const obx_message *m, wh_req **out, char *err,
                    size_t err_size)
{
    static const char tchar[] =
        "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *dest = WH_STR(m->destination);
    wh_req *r = *out =
        calloc(1, sizeof *r + m->payload_len + strlen(inst->url) + 2 + 3 * strlen(dest));
    if (!r)
        return snprintf(err, err_size, "out of memory"), OBX_RETRIABLE;
    r->token = m->token;
    r->body_len = m->payload_len;
    memcpy(r->data, m->payload ? m->payload : "", m->payload_len);
    obx_status st = wh_url(inst, dest, r->url = r->data + m->payload_len, err, err_size);
    obx_envelope env;
    obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_HTTP, OBX_ENVELOPE_STANDARD);
    const char *ct = m->content_type ? m->content_type : "application/octet-stream";
    if (st == OBX_OK)
        st = wh_header(&r->headers, "", "Content-Type", ct, err, err_size);
    for (size_t i = 0; i < env.count && st == OBX_OK; i++)
        st = wh_header(&r->headers, "", env.field[i].name, env.field[i].value, err, err_size);
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
    if (inst->secret && st == OBX_OK)
        st = wh_sign(inst, r, err, err_size);
    return st;
}

void wh_req_free(wh_req *r)
{
    if (!r)
        return;
    curl_slist_free_all(r->headers);
    free(r);
}
