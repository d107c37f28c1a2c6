/*
 * webhook driver internals, shared by its three files:
 * webhook.c (options, life cycle, the ABI table), wh_request.c (one message
 * to one HTTP request: URL, headers, signature) and wh_transfer.c (running
 * requests on libcurl's multi interface and judging the answers).
 */
#ifndef WH_H
#define WH_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include <obx/cloudevents.h>
#include <obx/driver.h>

#define WH_HOLD_MAX_MS 30000 /* longest Retry-After held here; keep well under the lease */
/* How long a 2xx answer's body may take after its headers: long enough for a
 * normal body to end (the connection is then kept), then the transfer is cut
 * and the event counts as delivered: the status is the acknowledgement. */
#define WH_BODY_GRACE_MS 1000
#define WH_STR(s) ((s) ? (s) : "")

/* One accepted message, from publish_batch to its completion: one allocation. */
typedef struct wh_req {
    struct wh_req *next; /* in the queue */
    uint64_t token;
    struct curl_slist *headers;
    size_t slot;         /* its easy handle while running */
    uint64_t start_seq;  /* when it started, in the instance's count of starts */
    int held;            /* already held once for a Retry-After */
    long status;         /* of the last status line seen */
    int64_t answered_ms; /* monotonic ms a whole 2xx header block arrived; 0 before */
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
    int client_cert; /* a property sslcert: the relay shows a client certificate */
    int64_t max_in_flight, timeout_ms;
    char *secret;
    unsigned char sign_key[256]; /* Standard Webhooks key (WH_STD_KEY_MAX), sign_key_len 0: none */
    size_t sign_key_len;
    obx_ce_config ce;
    size_t secret_len, in_flight, running; /* in_flight: accepted and not completed */
    CURLM *multi;
    CURL **easy;          /* one per slot, reused: connections stay alive */
    wh_req **busy;        /* the request running in each slot, or NULL */
    wh_req *head, *tail;  /* accepted, not started */
    int64_t paused_until; /* monotonic ms: nothing starts before (Retry-After) */
    uint64_t starts;      /* requests started so far */
    uint64_t answered;    /* the latest start_seq the endpoint answered (a status >= 200) */
};

/* wh_request.c: the request for one message; PERMANENT (with the reason in
 * err) when it can never be sent. *out may be set even on failure. */
obx_status wh_build(obx_instance *inst, const obx_message *m, wh_req **out, char *err,
                    size_t err_size);
void wh_req_free(wh_req *r);

/* wh_transfer.c */
int64_t wh_now_ms(void);
size_t wh_write(char *data, size_t size, size_t n, void *userdata); /* CURLOPT_WRITEFUNCTION */
size_t wh_header_seen(char *data, size_t size, size_t n, void *userdata); /* HEADERFUNCTION */
void wh_finish(obx_instance *inst, wh_req *r, obx_status st, int code, const char *detail);
int wh_reap(obx_instance *inst);
/* One round: start what may start, move bytes, complete what finished;
 * waits up to timeout_ms only when nothing finished at once. */
void wh_poll(obx_instance *inst, int timeout_ms);

#endif
