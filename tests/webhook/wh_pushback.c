/*
 * wh_pushback: whose fault each webhook answer is, the driver alone against
 * whserver (tests/common's recording host, the relay's own host table):
 *  - 429, 503, 408 without Retry-After: UNAVAILABLE (pushback, no attempt);
 *  - 429 with Retry-After twice: held and re-sent once by the driver, then
 *    UNAVAILABLE;
 *  - a connection closed with no answer (curl 52): UNAVAILABLE;
 *  - an endpoint that accepts and never answers: the requests running time
 *    out UNAVAILABLE (curl 28), the ones still queued are handed back
 *    UNAVAILABLE unsent;
 *  - one event that hangs while the endpoint answers the requests started
 *    after it: RETRIABLE (the event's: a poison event must end dead);
 *  - a TLS handshake that fails: UNAVAILABLE; a wrong signature key (401):
 *    PERMANENT, as any 4xx but 408 and 429.
 *
 *   wh_pushback WEBHOOK.so URL   (WEBHOOK_TEST_SECRET set, as for whserver)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_host.h"
#include "messages.h"

static const loaded_driver *drv;
static const char *url;
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define MAXN 8

/* Publishes one message per event type (tokens 0..n-1) on a fresh instance
 * posting to to_url signed with the key in secret_env, and waits for every
 * completion; the outcomes are in the returned host. */
static fake_host *publish_to(const char *to_url, const char *secret_env, const char *const *types,
                             size_t n, int max_in_flight, int timeout_ms)
{
    static unsigned salt;
    char err[256];
    fake_host *h = fh_new(drv, MAXN);
    if (fh_set(h, "url", to_url) < 0 || fh_set(h, "secret_env", secret_env) < 0 ||
        fh_set_int(h, "max_in_flight", max_in_flight) < 0 ||
        fh_set_int(h, "timeout_ms", timeout_ms) < 0)
        exit(2);
    obx_instance *inst = fh_create(h, err, sizeof err);
    if (!inst) {
        printf("FAIL create: %s\n", err);
        exit(1);
    }
    obx_message m[MAXN];
    msg_text text[MAXN];
    obx_status acc[MAXN];
    msg_shape shape = {.run = 0x77, .salt = ++salt, .aggregates = MAXN, .destination = "push"};
    for (size_t i = 0; i < n; i++) {
        msg_make(&shape, i, &text[i], &m[i]);
        m[i].event_type = types[i];
    }
    CHECK(fh_publish(h, inst, m, n, acc) == OBX_OK, "publish_batch");
    for (size_t i = 0; i < n; i++)
        CHECK(acc[i] == OBX_OK, "%s: accept %d", types[i], acc[i]);
    CHECK(fh_wait_settled(h, inst, 30000), "completions did not come within 30 s");
    fh_close(h, inst);
    char why[256];
    CHECK(fh_violations(h, why, sizeof why) == 0, "contract: %s", why);
    drv->def.destroy(inst);
    return h;
}

static fake_host *publish(const char *const *types, size_t n, int max_in_flight, int timeout_ms)
{
    return publish_to(url, "WEBHOOK_TEST_SECRET", types, n, max_in_flight, timeout_ms);
}

static void expect(fake_host *h, uint64_t t, const char *type, obx_status st, const char *in_detail)
{
    fh_token *k = &h->tok[t];
    CHECK(k->completions == 1 && k->status == st, "%s: %u completions, status %d, want %d (\"%s\")",
          type, k->completions, k->status, st, k->detail);
    CHECK(!in_detail || strstr(k->detail, in_detail), "%s: detail \"%s\" lacks \"%s\"", type,
          k->detail, in_detail);
    printf("%s %s: status %d \"%s\"\n", k->status == st ? "ok" : "FAIL", type, k->status,
           k->detail);
}

int main(int argc, char **argv)
{
    char err[1024];
    if (argc < 3)
        return printf("usage: wh_pushback WEBHOOK.so URL\n"), 2;
    loaded_driver *loaded = fh_load(argv[1], err, sizeof err);
    if (!loaded)
        return printf("FAIL: %s\n", err), 1;
    drv = loaded;
    url = argv[2];

    static const char *const push[] = {"order.push.429", "order.push.503", "order.push.408",
                                       "order.push.reset"};
    fake_host *h = publish(push, 4, 8, 5000);
    expect(h, 0, push[0], OBX_UNAVAILABLE, "HTTP 429");
    expect(h, 1, push[1], OBX_UNAVAILABLE, "HTTP 503");
    expect(h, 2, push[2], OBX_UNAVAILABLE, "HTTP 408");
    expect(h, 3, push[3], OBX_UNAVAILABLE, "curl 52");
    fh_free(h);

    static const char *const twice[] = {"order.push.twice"};
    h = publish(twice, 1, 8, 5000);
    expect(h, 0, "429 with Retry-After twice", OBX_UNAVAILABLE, "Retry-After 1 s");
    fh_free(h);

    /* two running, three queued: the queued ones never reach the endpoint */
    static const char *const hung[] = {"order.hang.1", "order.hang.2", "order.hang.3",
                                       "order.hang.4", "order.hang.5"};
    h = publish(hung, 5, 2, 1000);
    expect(h, 0, "hung endpoint, running", OBX_UNAVAILABLE, "curl 28");
    expect(h, 1, "hung endpoint, running", OBX_UNAVAILABLE, "curl 28");
    for (uint64_t t = 2; t < 5; t++)
        expect(h, t, "hung endpoint, queued", OBX_UNAVAILABLE, "not sent: curl 28");
    fh_free(h);

    /* the endpoint answers the requests started after the hung one */
    static const char *const poison[] = {"order.hang.poison", "order.created", "order.created"};
    h = publish(poison, 3, 4, 1000);
    expect(h, 0, "one event hangs, later ones answered", OBX_RETRIABLE, "answered later requests");
    expect(h, 1, "its neighbour", OBX_OK, NULL);
    expect(h, 2, "its neighbour", OBX_OK, NULL);
    fh_free(h);

    /* the endpoint refusing everything: a wrong key (401), TLS to a plain
     * HTTP port (a handshake that fails) */
    static const char *const one[] = {"order.created"};
    setenv("WEBHOOK_WRONG_SECRET", "not-the-key", 1);
    h = publish_to(url, "WEBHOOK_WRONG_SECRET", one, 1, 1, 5000);
    expect(h, 0, "wrong signature key (401)", OBX_PERMANENT, "HTTP 401");
    fh_free(h);
    char tls_url[256];
    snprintf(tls_url, sizeof tls_url, "https://%s", strstr(url, "://") + 3);
    h = publish_to(tls_url, "WEBHOOK_TEST_SECRET", one, 1, 1, 5000);
    expect(h, 0, "TLS handshake failed", OBX_UNAVAILABLE, "curl 35");
    fh_free(h);

    loader_close(loaded);
    printf("%s wh_pushback\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
