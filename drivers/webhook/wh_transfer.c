/* Running requests on libcurl's multi interface and judging the answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wh.h"

int64_t wh_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

size_t wh_write(char *data, size_t size, size_t n, void *userdata)
{
    wh_req *r = userdata;
    size_t room = sizeof r->resp - 1 - r->resp_len, len = size * n < room ? size * n : room;
    memcpy(r->resp + r->resp_len, data, len);
    r->resp_len += len;
    return size * n;
}

/* Notes each status line, and when a whole header block of a 2xx answer has
 * arrived (a 1xx block before it decides nothing): from then on the answer is
 * known whatever becomes of the body. */
size_t wh_header_seen(char *data, size_t size, size_t n, void *userdata)
{
    wh_req *r = userdata;
    size_t len = size * n;
    if (len > 5 && memcmp(data, "HTTP/", 5) == 0) {
        char line[32];
        snprintf(line, sizeof line, "%.*s", (int)(len < 31 ? len : 31), data);
        const char *sp = strchr(line, ' ');
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    } else if ((len == 2 && data[0] == '\r') || (len == 1 && data[0] == '\n')) {
        if (r->status >= 200 && r->status < 300 && !r->answered_ms)
            r->answered_ms = wh_now_ms();
    }
    return len;
}

void wh_finish(obx_instance *inst, wh_req *r, obx_status st, int code, const char *detail)
{
    if (r->status >= 200 && r->start_seq > inst->answered) /* the endpoint was alive then */
        inst->answered = r->start_seq;
    inst->host->complete(inst->host->host_ctx, r->token, st, code, detail);
    inst->in_flight--; /* after complete returned: flush must not see 0 earlier */
    wh_req_free(r);
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
        r->status = 0;
        r->answered_ms = 0;
        r->start_seq = ++inst->starts;
        curl_easy_setopt(e, CURLOPT_URL, r->url);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, (char *)r->data);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
        /* a proxy's "200 Connection established" is no answer to the POST */
        curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
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

/* Whose fault a failed transfer is. No connection (refused, name not
 * resolved, a TLS handshake or certificate that fails): the endpoint's
 * state. Connected, then no answer within
 * timeout_ms, a reset, or a connection closed with nothing sent back:
 * pushback (a hung, overloaded or restarting endpoint), unless the endpoint
 * answered a request started after this one meanwhile: it is alive, and this
 * event is what it cannot take (RETRIABLE, so a poison event still ends dead
 * instead of pausing the output on every offer). */
static obx_status wh_transport_status(const obx_instance *inst, const wh_req *r, CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return OBX_UNAVAILABLE;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING: return inst->answered > r->start_seq ? OBX_RETRIABLE : OBX_UNAVAILABLE;
    default: return OBX_RETRIABLE; /* an upload that failed, ... */
    }
}

/* The endpoint cannot take requests now: what waits in the queue is handed
 * back UNAVAILABLE rather than sent into the same wall (one timeout_ms per
 * max_in_flight requests would outlast the relay's transaction bound). A
 * request held for its Retry-After stays: the driver re-sends it. */
static void wh_hand_back(obx_instance *inst, int code, const char *why)
{
    char detail[448]; /* "not sent: " and a verdict's detail */
    snprintf(detail, sizeof detail, "not sent: %s", why);
    wh_req *r = inst->head, *last = NULL;
    inst->head = inst->tail = NULL;
    while (r) {
        wh_req *next = r->next;
        if (r->held) {
            r->next = NULL;
            *(last ? &last->next : &inst->head) = r;
            inst->tail = last = r;
        } else {
            wh_finish(inst, r, OBX_UNAVAILABLE, code, detail);
        }
        r = next;
    }
}

/* Holds r for a Retry-After of `after` seconds; 0 when it was held before. */
static int wh_hold(obx_instance *inst, wh_req *r, long code, curl_off_t after)
{
    int64_t wait = after * 1000 < WH_HOLD_MAX_MS ? after * 1000 : WH_HOLD_MAX_MS;
    if (wh_now_ms() + wait > inst->paused_until)
        inst->paused_until = wh_now_ms() + wait;
    if (r->held || after * 1000 > WH_HOLD_MAX_MS)
        return 0;
    /* re-send it from here once the wait is over: the engine's retry
     * could come sooner (from another worker), and costs an attempt */
    inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                    "HTTP %ld: holding requests %lld s (Retry-After)", code, (long long)after);
    r->held = 1;
    if (!(r->next = inst->head))
        inst->tail = r;
    inst->head = r;
    return 1;
}

/* A hint for a failure that may be a refused client certificate: over TLS
 * 1.3 the endpoint judges it after the client's handshake is done, so the
 * refusal comes as an alert or a closed connection at the first send or
 * read of a new connection (curl 55 or 56), not as a handshake error. */
static const char *wh_tls_hint(const obx_instance *inst, CURL *e, CURLcode cc)
{
    long connects = 0;
    if ((cc != CURLE_SEND_ERROR && cc != CURLE_RECV_ERROR) || strncmp(inst->url, "https://", 8) ||
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects) != CURLE_OK || connects < 1)
        return "";
    return inst->client_cert
               ? " (on a new TLS connection: the endpoint may have refused the client "
                 "certificate, property sslcert)"
               : " (on a new TLS connection: the endpoint may require a client certificate, "
                 "properties sslcert and sslkey)";
}

/* Classifies a finished transfer: completes it, or holds it for a Retry-After. */
static void wh_verdict(obx_instance *inst, wh_req *r, CURL *e, CURLcode cc)
{
    char detail[432]; /* curl's error buffer (256) and the hints */
    long code = 0;
    curl_off_t after = 0;
    if (cc != CURLE_OK && r->answered_ms) { /* a 2xx, then the body failed or timed out */
        wh_finish(inst, r, OBX_OK, (int)r->status, NULL);
        return;
    }
    if (cc != CURLE_OK) {
        obx_status st = wh_transport_status(inst, r, cc);
        snprintf(detail, sizeof detail, "curl %d: %s%s%s", (int)cc,
                 *r->errbuf ? r->errbuf : curl_easy_strerror(cc), wh_tls_hint(inst, e, cc),
                 st == OBX_RETRIABLE && inst->answered > r->start_seq
                     ? " (the endpoint answered later requests meanwhile)"
                     : "");
        wh_finish(inst, r, st, (int)cc, detail);
        if (st == OBX_UNAVAILABLE)
            wh_hand_back(inst, (int)cc, detail);
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
    /* 408, 429, 503 are pushback: the endpoint's state, no attempt counted;
     * other 4xx are about this request; 5xx and unexpected 1xx/3xx may pass */
    int pushback = code == 408 || code == 429 || code == 503;
    int retriable = pushback || code < 400 || code >= 500;
    if (retriable && curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0) {
        if (wh_hold(inst, r, code, after))
            return;
        snprintf(detail, sizeof detail, "HTTP %ld, Retry-After %lld s: %s", code, (long long)after,
                 r->resp);
    } else {
        snprintf(detail, sizeof detail, "HTTP %ld: %s", code, r->resp);
    }
    obx_status st = pushback ? OBX_UNAVAILABLE : retriable ? OBX_RETRIABLE : OBX_PERMANENT;
    wh_finish(inst, r, st, (int)code, detail);
    if (pushback)
        wh_hand_back(inst, (int)code, detail);
}

int wh_reap(obx_instance *inst)
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

/* Completes OK every 2xx whose body has taken WH_BODY_GRACE_MS, cutting its
 * transfer (and connection). Returns how many; *next_ms is the time until the
 * next one is due, or -1. */
static int wh_cut_bodies(obx_instance *inst, int64_t *next_ms)
{
    int done = 0;
    *next_ms = -1;
    for (size_t i = 0; i < (size_t)inst->max_in_flight; i++) {
        wh_req *r = inst->busy[i];
        if (!r || !r->answered_ms)
            continue;
        int64_t left = r->answered_ms + WH_BODY_GRACE_MS - wh_now_ms();
        if (left > 0) {
            if (*next_ms < 0 || left < *next_ms)
                *next_ms = left;
            continue;
        }
        curl_multi_remove_handle(inst->multi, inst->easy[i]);
        inst->busy[i] = NULL;
        inst->running--;
        wh_finish(inst, r, OBX_OK, (int)r->status, NULL);
        done++;
    }
    return done;
}

void wh_poll(obx_instance *inst, int timeout_ms)
{
    int still;
    int64_t cut;
    if (inst->closed)
        return;
    wh_start(inst);
    curl_multi_perform(inst->multi, &still);
    int done = wh_reap(inst);
    done += wh_cut_bodies(inst, &cut);
    if (!done && timeout_ms > 0) {
        int64_t pause = inst->paused_until - wh_now_ms();
        if (!inst->running && inst->head && pause < timeout_ms) /* wake when the pause ends */
            timeout_ms = pause > 0 ? (int)pause : 1;
        if (cut >= 0 && cut < timeout_ms) /* wake when a slow 2xx body is due to be cut */
            timeout_ms = cut > 0 ? (int)cut : 1;
        curl_multi_poll(inst->multi, NULL, 0, timeout_ms, NULL);
        curl_multi_perform(inst->multi, &still);
        wh_reap(inst);
        wh_cut_bodies(inst, &cut);
    }
    wh_start(inst);
}
