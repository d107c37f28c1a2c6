/*
 * webhook: POSTs every message, its payload as the body, to an HTTP(S)
 * endpoint with libcurl's multi interface. Up to max_in_flight requests run
 * at once over keep-alive HTTP/1.1 connections; accepted messages beyond
 * that wait in a FIFO here. A 2xx answer is the acknowledgement: the
 * receiver's promise that it has the event. README.md beside this file
 * describes the headers, the signature and the status mapping.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <obx/driver.h>

#define WH_HOLD_MAX_MS 30000 /* longest Retry-After held here; keep well under the lease */
#define WH_STR(s) ((s) ? (s) : "")

static const obx_option wh_options[] = {
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED,
     "http:// or https:// endpoint each message is POSTed to"},
    {"append_destination", OBX_OPT_BOOL, 0,
     "append the destination to url as one percent-encoded segment"},
    {"max_in_flight", OBX_OPT_INT, 0,
     "requests (and connections) at once per instance (default 32)"},
    {"timeout_ms", OBX_OPT_INT, 0, "whole-request timeout; a timeout is retriable (default 10000)"},
    {"secret_env", OBX_OPT_STRING, 0,
     "environment variable holding the HMAC-SHA256 key of X-Signature"},
    {NULL, 0, 0, NULL},
};

/* One accepted message, from publish_batch to its completion: one allocation. */
typedef struct wh_req {
    struct wh_req *next; /* in the queue */
    uint64_t token;
    struct curl_slist *headers;
    size_t slot; /* its easy handle while running */
    int held;    /* already held once for a Retry-After */
    size_t body_len, resp_len;
    char resp[160]; /* start of the response body, for the detail */
    char errbuf[CURL_ERROR_SIZE];
    char *url; /* in data, after the body */
    char data[];
} wh_req;

struct obx_instance {
    const obx_host *host;
    const char *url;
    int append_destination, closed;
    int64_t max_in_flight, timeout_ms;
    char *secret;
    size_t secret_len, in_flight, running; /* in_flight: accepted and not completed */
    CURLM *multi;
    CURL **easy;          /* one per slot, reused: connections stay alive */
    wh_req **busy;        /* the request running in each slot, or NULL */
    wh_req *head, *tail;  /* accepted, not started */
    int64_t paused_until; /* monotonic ms: nothing starts before (Retry-After) */
};

static int64_t wh_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Adds "prefix+name: value"; "" sends an empty value ("name;" to curl) and
 * NULL removes a header curl would add. A line break in a value would let row
 * data forge headers: such a message can never be sent. */
static obx_status wh_header(struct curl_slist **list, const char *prefix, const char *name,
                            const char *value, char *err, size_t err_size)
{
    char line[4096];
    int n = snprintf(line, sizeof line,
                     !value   ? "%s%s:%s"
                     : *value ? "%s%s: %s"
                              : "%s%s;%s",
                     prefix, name, value ? value : "");
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

static size_t wh_write(char *data, size_t size, size_t n, void *userdata)
{
    wh_req *r = userdata;
    size_t room = sizeof r->resp - 1 - r->resp_len, len = size * n < room ? size * n : room;
    memcpy(r->resp + r->resp_len, data, len);
    r->resp_len += len;
    return size * n;
}

/* The request for one message; PERMANENT when it can never be sent. */
static obx_status wh_build(obx_instance *inst, const obx_message *m, wh_req **out, char *err,
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
    char *u = stpcpy(r->url = r->data + m->payload_len, inst->url);
    if (inst->append_destination) {
        if (u[-1] != '/')
            *u++ = '/';
        for (const unsigned char *c = (const unsigned char *)dest; *c; c++)
            u += isalnum(*c) || strchr("-._~", *c) ? (*u = (char)*c, 1) : sprintf(u, "%%%02X", *c);
    }
    char created[40];
    time_t secs = (time_t)(m->created_at_us / 1000000);
    struct tm tm;
    size_t n = strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%S", gmtime_r(&secs, &tm));
    snprintf(created + n, sizeof created - n, ".%06dZ", (int)(m->created_at_us % 1000000));
    const char *fixed[][2] = {
        {"Content-Type", m->content_type ? m->content_type : "application/octet-stream"},
        {"X-Event-Id", WH_STR(m->event_id)},
        {"X-Event-Type", WH_STR(m->event_type)},
        {"X-Aggregate-Type", WH_STR(m->aggregate_type)},
        {"X-Aggregate-Id", WH_STR(m->aggregate_id)},
        {"X-Created-At", created},
        {"X-Outbox-Destination", dest},
        {"Expect", NULL}, /* no 100-continue round trip before bodies over 1 KiB */
    };
    obx_status st = OBX_OK;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && st == OBX_OK; i++)
        st = wh_header(&r->headers, "", fixed[i][0], fixed[i][1], err, err_size);
    for (size_t i = 0; i < m->header_count && st == OBX_OK; i++) {
        const char *k = m->headers[i].key, *v = m->headers[i].value;
        if (!*k || k[strspn(k, tchar)])
            return snprintf(err, err_size, "header \"%.64s\" is not an HTTP token", k),
                   OBX_PERMANENT;
        st = wh_header(&r->headers, "X-Header-", k, v ? v : "", err, err_size);
    }
    if (inst->secret && st == OBX_OK) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        char sig[16 + 2 * EVP_MAX_MD_SIZE] = "sha256=";
        HMAC(EVP_sha256(), inst->secret, (int)inst->secret_len, (unsigned char *)r->data,
             r->body_len, md, &md_len);
        for (unsigned i = 0; i < md_len; i++)
            sprintf(sig + 7 + 2 * i, "%02x", md[i]);
        st = md_len ? wh_header(&r->headers, "", "X-Signature", sig, err, err_size) : OBX_RETRIABLE;
        if (!md_len)
            snprintf(err, err_size, "HMAC-SHA256 failed");
    }
    return st;
}

static void wh_finish(obx_instance *inst, wh_req *r, obx_status st, int code, const char *detail)
{
    inst->host->complete(inst->host->host_ctx, r->token, st, code, detail);
    inst->in_flight--; /* after complete returned: flush must not see 0 earlier */
    curl_slist_free_all(r->headers);
    free(r);
}

/* Starts queued requests while slots are free and no Retry-After holds them. */
static void wh_start(obx_instance *inst)
{
    while (inst->head && inst->running < (size_t)inst->max_in_flight &&
           wh_now_ms() >= inst->paused_until) {
        wh_req *r = inst->head;
        if (!(inst->head = r->next))
            inst->tail = NULL;
        for (r->slot = 0; inst->busy[r->slot]; r->slot++)
            ;
        CURL *e = inst->easy[r->slot];
        r->resp_len = 0;
        r->errbuf[0] = '\0';
        curl_easy_setopt(e, CURLOPT_URL, r->url);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, (char *)r->data);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
        CURLMcode mc = curl_multi_add_handle(inst->multi, e);
        if (mc != CURLM_OK) {
            wh_finish(inst, r, OBX_RETRIABLE, (int)mc, curl_multi_strerror(mc));
            continue;
        }
        inst->busy[r->slot] = r;
        inst->running++;
    }
}

/* Classifies a finished transfer: completes it, or holds it for a Retry-After. */
static void wh_verdict(obx_instance *inst, wh_req *r, CURL *e, CURLcode cc)
{
    char detail[320];
    long code = 0;
    curl_off_t after = 0;
    if (cc != CURLE_OK) { /* refused, reset, timed out, TLS: all may pass */
        snprintf(detail, sizeof detail, "curl %d: %s", (int)cc,
                 *r->errbuf ? r->errbuf : curl_easy_strerror(cc));
        wh_finish(inst, r, OBX_RETRIABLE, (int)cc, detail);
        return;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
        wh_finish(inst, r, OBX_OK, (int)code, NULL);
        return;
    }
    for (size_t i = 0; i < r->resp_len; i++) /* one printable line for last_error */
        r->resp[i] = (unsigned char)r->resp[i] < 0x20 || r->resp[i] == 0x7f ? ' ' : r->resp[i];
    r->resp[r->resp_len] = '\0';
    /* other 4xx are about this request; 408, 429, 5xx and unexpected 1xx/3xx may pass */
    int retriable = code < 400 || code >= 500 || code == 408 || code == 429;
    if (retriable && curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0) {
        int64_t wait = after * 1000 < WH_HOLD_MAX_MS ? after * 1000 : WH_HOLD_MAX_MS;
        if (wh_now_ms() + wait > inst->paused_until)
            inst->paused_until = wh_now_ms() + wait;
        if (!r->held && after * 1000 <= WH_HOLD_MAX_MS) {
            /* re-send it from here once the wait is over: the engine's retry
             * could come sooner (from another worker), and costs an attempt */
            inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                            "HTTP %ld: holding requests %lld s (Retry-After)", code,
                            (long long)after);
            r->held = 1;
            if (!(r->next = inst->head))
                inst->tail = r;
            inst->head = r;
            return;
        }
        snprintf(detail, sizeof detail, "HTTP %ld, Retry-After %lld s: %s", code, (long long)after,
                 r->resp);
    } else {
        snprintf(detail, sizeof detail, "HTTP %ld: %s", code, r->resp);
    }
    wh_finish(inst, r, retriable ? OBX_RETRIABLE : OBX_PERMANENT, (int)code, detail);
}

static int wh_reap(obx_instance *inst)
{
    int done = 0, left;
    for (CURLMsg *msg; (msg = curl_multi_info_read(inst->multi, &left));) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode cc = msg->data.result; /* msg dies with remove_handle */
        char *r;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &r);
        curl_multi_remove_handle(inst->multi, e);
        inst->busy[((wh_req *)r)->slot] = NULL;
        inst->running--;
        wh_verdict(inst, (wh_req *)r, e, cc);
        done++;
    }
    return done;
}

/* One round: start what may start, move bytes, complete what finished;
 * waits up to timeout_ms only when nothing finished at once. */
static void wh_poll(obx_instance *inst, int timeout_ms)
{
    int still;
    if (inst->closed)
        return;
    wh_start(inst);
    curl_multi_perform(inst->multi, &still);
    if (!wh_reap(inst) && timeout_ms > 0) {
        int64_t pause = inst->paused_until - wh_now_ms();
        if (!inst->running && inst->head && pause < timeout_ms) /* wake when the pause ends */
            timeout_ms = pause > 0 ? (int)pause : 1;
        curl_multi_poll(inst->multi, NULL, 0, timeout_ms, NULL);
        curl_multi_perform(inst->multi, &still);
        wh_reap(inst);
    }
    wh_start(inst);
}

static obx_status wh_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                   obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        char err[160];
        wh_req *r = NULL;
        obx_status st =
            inst->closed ? OBX_RETRIABLE : wh_build(inst, &msgs[i], &r, err, sizeof err);
        /* an unsendable message is accepted and completed, so its reason reaches last_error */
        accept[i] = st == OBX_PERMANENT ? OBX_OK : st;
        if (st == OBX_PERMANENT)
            inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_PERMANENT, 0, err);
        if (st != OBX_OK && r)
            curl_slist_free_all(r->headers), free(r);
        else if (st == OBX_OK) {
            inst->in_flight++;
            *(inst->tail ? &inst->tail->next : &inst->head) = r;
            inst->tail = r;
        }
    }
    wh_poll(inst, 0);
    return OBX_OK;
}

static size_t wh_flush(obx_instance *inst, int timeout_ms)
{
    int64_t deadline = wh_now_ms() + timeout_ms, left;
    while (inst->in_flight && !inst->closed && (left = deadline - wh_now_ms()) > 0)
        wh_poll(inst, (int)left);
    return inst->in_flight;
}

/* Completes what the receiver already answered, aborts the rest. */
static void wh_close(obx_instance *inst)
{
    int still;
    if (inst->closed)
        return;
    if (inst->multi && curl_multi_perform(inst->multi, &still) == CURLM_OK)
        wh_reap(inst);
    inst->closed = 1;
    for (int64_t i = 0; inst->busy && i < inst->max_in_flight; i++)
        if (inst->busy[i]) {
            curl_multi_remove_handle(inst->multi, inst->easy[i]);
            wh_finish(inst, inst->busy[i], OBX_RETRIABLE, 0, "aborted");
        }
    for (wh_req *r; (r = inst->head);) {
        inst->head = r->next;
        wh_finish(inst, r, OBX_RETRIABLE, 0, "aborted");
    }
    for (int64_t i = 0; inst->easy && i < inst->max_in_flight; i++)
        curl_easy_cleanup(inst->easy[i]);
    curl_multi_cleanup(inst->multi);
}

static void wh_destroy(obx_instance *inst)
{
    wh_close(inst);
    if (inst->secret)
        OPENSSL_cleanse(inst->secret, inst->secret_len);
    free(inst->secret);
    free(inst->easy);
    free(inst->busy);
    free(inst);
    curl_global_cleanup();
}

/* An easy handle with the fixed options, then the output's `properties`:
 * libcurl option names (CURLOPT_ without the prefix) with number or string values. */
static CURL *wh_easy_new(obx_instance *inst, char *err, size_t err_size)
{
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)inst->timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, wh_write);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "outbox-relay-webhook/0.1.0");
    const char *k, *v;
    for (size_t i = 0; e && inst->host->get_property(inst->host->host_ctx, i, &k, &v); i++) {
        const struct curl_easyoption *o = curl_easy_option_by_name(k);
        CURLcode rc = !o ? CURLE_UNKNOWN_OPTION
                      : o->type == CURLOT_LONG || o->type == CURLOT_VALUES
                          ? curl_easy_setopt(e, o->id, strtol(v, NULL, 0))
                      : o->type == CURLOT_STRING ? curl_easy_setopt(e, o->id, v)
                                                 : CURLE_BAD_FUNCTION_ARGUMENT;
        if (rc != CURLE_OK) {
            snprintf(err, err_size, "property %s: %s (a libcurl option taking a number or string)",
                     k, curl_easy_strerror(rc));
            curl_easy_cleanup(e);
            return NULL;
        }
    }
    if (!e)
        snprintf(err, err_size, "curl_easy_init failed");
    return e;
}

static obx_instance *wh_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    void *ctx = host->host_ctx;
    const char *url = "", *secret_env = NULL, *secret = NULL;
    int64_t max = 32, timeout = 10000;
    int append = 0;
    host->get_string(ctx, "url", &url);
    host->get_string(ctx, "secret_env", &secret_env);
    host->get_bool(ctx, "append_destination", &append);
    host->get_int(ctx, "max_in_flight", &max);
    host->get_int(ctx, "timeout_ms", &timeout);
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return snprintf(errstr, errstr_size, "url must start with http:// or https://"), NULL;
    if (max < 1 || max > 4096 || timeout < 1 || timeout > INT32_MAX)
        return snprintf(errstr, errstr_size,
                        "max_in_flight must be 1..4096 and timeout_ms positive"),
               NULL;
    if (secret_env &&
        (!(secret = getenv(secret_env)) || !*secret)) /* its name only, never the value */
        return snprintf(errstr, errstr_size, "secret_env: environment variable %s is not set",
                        secret_env),
               NULL;
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return free(inst),
               snprintf(errstr, errstr_size, "out of memory or curl_global_init failed"), NULL;
    *inst = (obx_instance){.host = host,
                           .url = url,
                           .append_destination = append,
                           .max_in_flight = max,
                           .timeout_ms = timeout,
                           .secret = secret ? strdup(secret) : NULL,
                           .secret_len = secret ? strlen(secret) : 0,
                           .multi = curl_multi_init(),
                           .easy = calloc((size_t)max, sizeof(CURL *)),
                           .busy = calloc((size_t)max, sizeof(wh_req *))};
    int ok = inst->easy && inst->busy && inst->multi && (!secret || inst->secret);
    if (!ok)
        snprintf(errstr, errstr_size, "out of memory");
    /* one connection per request in flight, kept alive between requests */
    curl_multi_setopt(inst->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max);
    curl_multi_setopt(inst->multi, CURLMOPT_MAXCONNECTS, (long)max);
    for (int64_t i = 0; ok && i < max; i++)
        ok = (inst->easy[i] = wh_easy_new(inst, errstr, errstr_size)) != NULL;
    if (!ok)
        wh_destroy(inst);
    return ok ? inst : NULL;
}

static const obx_driver_def wh_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "webhook",
    .version = "0.1.0",
    .description =
        "HTTP(S) webhook: POSTs each event, HMAC-signed, through libcurl (multi, keep-alive)",
    .options = wh_options,
    .create = wh_create,
    .publish_batch = wh_publish_batch,
    .poll = wh_poll,
    .flush = wh_flush,
    .close = wh_close,
    .destroy = wh_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &wh_def;
}
