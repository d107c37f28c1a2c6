/*
 * webhook: POSTs every message, its payload as the body, to an HTTP(S)
 * endpoint with libcurl's multi interface. Up to max_in_flight requests run
 * at once over keep-alive HTTP/1.1 connections; accepted messages beyond
 * that wait in a FIFO here. A 2xx answer is the acknowledgement: the
 * receiver's promise that it has the event. README.md beside this file
 * describes the headers, the signature and the status mapping.
 *
 * This file: options, the instance's life cycle and the ABI table; see wh.h
 * for the other two files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "wh.h"
#include "wh_sign.h"

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
    {"signing_secret_env", OBX_OPT_STRING, 0,
     "environment variable holding a Standard Webhooks secret (whsec_...): webhook-* headers"},
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

/* Parallel to wh_options: what a 1.1 host checks and defaults before create. */
static const obx_option_spec wh_option_specs[] = {
    {NULL, 0, 0, NULL, NULL},            /* url */
    {"false", 0, 0, NULL, NULL},         /* append_destination */
    {"32", 1, 4096, NULL, NULL},         /* max_in_flight */
    {"10000", 1, INT32_MAX, NULL, NULL}, /* timeout_ms */
    {NULL, 0, 0, NULL, NULL},            /* secret_env */
    {NULL, 0, 0, NULL, NULL},            /* signing_secret_env */
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};
_Static_assert(sizeof wh_options / sizeof *wh_options ==
                   sizeof wh_option_specs / sizeof *wh_option_specs,
               "wh_option_specs must be parallel to wh_options");

/* A message that can never be sent: its reason goes with the refusal on a
 * 1.1 host; a 1.0 host only learns reasons from completions, so there it is
 * accepted and completed at once. */
static void wh_refuse(obx_instance *inst, const obx_message *m, obx_status st, const char *why,
                      obx_status *accept)
{
    const obx_host *host = inst->host;
    if (OBX_HOST_HAS(host, refuse)) {
        *accept = st;
        host->refuse(host->host_ctx, m->token, 0, why);
    } else if (st == OBX_PERMANENT) {
        *accept = OBX_OK;
        host->complete(host->host_ctx, m->token, st, 0, why);
    } else {
        *accept = st;
    }
}

static obx_status wh_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                   obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        char err[160] = "instance closed";
        wh_req *r = NULL;
        obx_status st =
            inst->closed ? OBX_RETRIABLE : wh_build(inst, &msgs[i], &r, err, sizeof err);
        if (st != OBX_OK) {
            wh_req_free(r);
            wh_refuse(inst, &msgs[i], st, err, &accept[i]);
            continue;
        }
        accept[i] = OBX_OK;
        inst->in_flight++;
        *(inst->tail ? &inst->tail->next : &inst->head) = r;
        inst->tail = r;
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

/* Completes what the receiver already answered (a 2xx whose body is still
 * coming included), aborts the rest. */
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
            wh_req *r = inst->busy[i];
            curl_multi_remove_handle(inst->multi, inst->easy[i]);
            if (r->answered_ms)
                wh_finish(inst, r, OBX_OK, (int)r->status, NULL);
            else
                wh_finish(inst, r, OBX_RETRIABLE, 0, "aborted");
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
    OPENSSL_cleanse(inst->sign_key, sizeof inst->sign_key);
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
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, wh_header_seen);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "outbox-relay-webhook/0.1.0");
    const char *k, *v;
    for (size_t i = 0; e && inst->host->get_property(inst->host->host_ctx, i, &k, &v); i++) {
        const struct curl_easyoption *o = curl_easy_option_by_name(k);
        CURLcode rc = !o ? CURLE_UNKNOWN_OPTION
                      : o->type == CURLOT_LONG || o->type == CURLOT_VALUES
                          ? curl_easy_setopt(e, o->id, strtol(v, NULL, 0))
                      : o->type == CURLOT_STRING ? curl_easy_setopt(e, o->id, v)
                                                 : CURLE_BAD_FUNCTION_ARGUMENT;
        if (o && o->id == CURLOPT_SSLCERT)
            inst->client_cert = 1;
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
    const char *url = "", *secret_env = NULL, *secret = NULL, *signing_env = NULL, *signing = NULL;
    int64_t max = 32, timeout = 10000;
    int append = 0;
    host->get_string(ctx, "url", &url);
    host->get_string(ctx, "secret_env", &secret_env);
    host->get_bool(ctx, "append_destination", &append);
    host->get_int(ctx, "max_in_flight", &max);
    host->get_int(ctx, "timeout_ms", &timeout);
    host->get_string(ctx, "signing_secret_env", &signing_env);
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
    if (signing_env && (!(signing = getenv(signing_env)) || !*signing))
        return snprintf(errstr, errstr_size,
                        "signing_secret_env: environment variable %s is not set", signing_env),
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
    obx_ce_config_read(host, &inst->ce);
    int ok = inst->easy && inst->busy && inst->multi && (!secret || inst->secret);
    if (!ok)
        snprintf(errstr, errstr_size, "out of memory");
    if (ok && signing_env) { /* the variable's name only in the error, never its value */
        ok = wh_std_key(signing, inst->sign_key, sizeof inst->sign_key, &inst->sign_key_len) == 0;
        if (!ok)
            snprintf(errstr, errstr_size,
                     "signing_secret_env: %s is not a whsec_<base64> secret of at most %d bytes",
                     signing_env, WH_STD_KEY_MAX);
    }
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
    .option_specs = wh_option_specs,
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
