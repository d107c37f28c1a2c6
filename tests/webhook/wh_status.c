/*
 * wh_status: the webhook driver's ABI 1.1 behaviour against a recording host,
 * no receiver needed:
 *  - a receiver nobody listens on completes UNAVAILABLE (curl 7), not
 *    RETRIABLE: the output's state, no attempt counted;
 *  - a destination "..", "." or with such a segment is refused PERMANENT
 *    with its reason through host->refuse on a 1.1 host, and on a 1.0 host
 *    (no refuse) accepted and completed PERMANENT with the same reason;
 *  - the option specs match the options (same length, defaults in range);
 *  - a 200 whose body never ends completes OK with code 200 (not a timeout),
 *    and header values that are empty, only spaces or only blanks are sent
 *    as empty headers ("X-Header-k:"), not dropped.
 *   wh_status DRIVERS_DIR
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host/loader.h"

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

static char url[128];
static struct {
    uint64_t token;
    int status, code, refused;
    char detail[400];
} seen[16];
static int nseen;

static void h_log(void *ctx, obx_log_level level, const char *fmt, ...)
{
    (void)ctx, (void)level, (void)fmt;
}
static int h_string(void *ctx, const char *name, const char **out)
{
    (void)ctx;
    return !strcmp(name, "url") ? (*out = url, 1) : 0;
}
static int h_int(void *ctx, const char *name, int64_t *out)
{
    (void)ctx;
    return !strcmp(name, "timeout_ms") ? (*out = 5000, 1) : 0;
}
static int h_bool(void *ctx, const char *name, int *out)
{
    (void)ctx;
    return !strcmp(name, "append_destination") ? (*out = 1, 1) : 0;
}
static int h_double(void *ctx, const char *name, double *out)
{
    (void)ctx, (void)name, (void)out;
    return 0;
}
static int h_property(void *ctx, size_t i, const char **k, const char **v)
{
    (void)ctx, (void)i, (void)k, (void)v;
    return 0;
}
static void record(uint64_t token, int status, int code, const char *detail, int refused)
{
    if (nseen < 16) {
        seen[nseen].token = token, seen[nseen].status = status, seen[nseen].code = code;
        seen[nseen].refused = refused;
        snprintf(seen[nseen].detail, sizeof seen[nseen].detail, "%s", detail ? detail : "");
    }
    nseen++;
}
static void h_complete(void *ctx, uint64_t token, obx_status st, int code, const char *detail)
{
    (void)ctx;
    record(token, st, code, detail, 0);
}
static void h_refuse(void *ctx, uint64_t token, int code, const char *detail)
{
    (void)ctx;
    record(token, -1, code, detail, 1);
}

/* A loopback port nobody listens on: bound, then closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        exit(2);
    close(fd);
    return ntohs(a.sin_port);
}

static const char *const dests[] = {"orders", "..", ".", "a/../b", "a/.", "..x"};
#define NDESTS (sizeof dests / sizeof dests[0])

static int find(uint64_t token)
{
    for (int i = 0; i < nseen && i < 16; i++)
        if (seen[i].token == token)
            return i;
    return -1;
}

/* Publishes one message per destination through a host of the given size. */
static void run(const loaded_driver *drv, uint32_t host_size)
{
    obx_host host = {sizeof host, NULL,       h_log,      h_string, h_int, h_bool,
                     h_double,    h_property, h_complete, h_refuse, NULL};
    host.struct_size = host_size;
    char err[256] = "";
    obx_instance *inst = drv->def.create(&host, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        return;
    obx_message m[NDESTS];
    obx_status accept[NDESTS];
    for (size_t i = 0; i < NDESTS; i++)
        m[i] = (obx_message){.token = 100 + i,
                             .event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01",
                             .event_type = "t",
                             .aggregate_type = "A",
                             .aggregate_id = "1",
                             .destination = dests[i],
                             .payload = "{}",
                             .payload_len = 2,
                             .content_type = "application/json",
                             .attempt = 1};
    nseen = 0;
    CHECK(drv->def.publish_batch(inst, m, NDESTS, accept) == OBX_OK, "publish_batch");
    size_t left = drv->def.flush(inst, 10000);
    CHECK(left == 0, "flush left %zu in flight", left);
    drv->def.close(inst);
    drv->def.destroy(inst);
    int v11 = host_size >= sizeof(obx_host);
    CHECK(nseen == (int)NDESTS, "%d outcomes for %zu messages", nseen, NDESTS);
    for (size_t i = 0; i < NDESTS; i++) {
        int k = find(100 + i);
        int bad = i >= 1 && i <= 4;
        CHECK(k >= 0, "no outcome for destination %s", dests[i]);
        if (k < 0)
            continue;
        printf("%s host, destination \"%s\": accept %d, %s status %d code %d: %s\n",
               v11 ? "1.1" : "1.0", dests[i], accept[i], seen[k].refused ? "refused" : "completed",
               seen[k].status, seen[k].code, seen[k].detail);
        if (bad && v11)
            CHECK(accept[i] == OBX_PERMANENT && seen[k].refused, "%s: not refused", dests[i]);
        if (bad && !v11)
            CHECK(accept[i] == OBX_OK && seen[k].status == OBX_PERMANENT, "%s: not PERMANENT",
                  dests[i]);
        if (bad)
            CHECK(strstr(seen[k].detail, "segment"), "%s: reason \"%s\"", dests[i], seen[k].detail);
        if (!bad)
            CHECK(accept[i] == OBX_OK && !seen[k].refused && seen[k].status == OBX_UNAVAILABLE &&
                      seen[k].code == 7,
                  "%s: wanted a completion UNAVAILABLE with curl 7", dests[i]);
    }
}

/* The stalling receiver: one connection; keeps the request's bytes, answers
 * 200 with one chunk of a body that never ends, then holds the connection
 * until the client hangs up. */
static int stall_fd;
static char request[16384];
static size_t request_len;

static void *stall_serve(void *arg)
{
    (void)arg;
    int c = accept(stall_fd, NULL, NULL);
    ssize_t n;
    while (c >= 0 && request_len < sizeof request - 1 &&
           (n = read(c, request + request_len, sizeof request - 1 - request_len)) > 0) {
        request_len += (size_t)n;
        request[request_len] = '\0';
        char *end = strstr(request, "\r\n\r\n");
        if (end && (size_t)(end + 4 - request) + 2 <= request_len) /* the 2-byte body is in */
            break;
    }
    static const char answer[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n.\r\n";
    char buf[256];
    if (c >= 0 && write(c, answer, sizeof answer - 1) == (ssize_t)(sizeof answer - 1))
        while (read(c, buf, sizeof buf) > 0) /* never the last chunk */
            ;
    if (c >= 0)
        close(c);
    return NULL;
}

static void stalled_answer(const loaded_driver *drv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    stall_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (stall_fd < 0 || bind(stall_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(stall_fd, 4) != 0 || getsockname(stall_fd, (struct sockaddr *)&a, &len) != 0)
        exit(2);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hooks", ntohs(a.sin_port));
    pthread_t t;
    if (pthread_create(&t, NULL, stall_serve, NULL) != 0)
        exit(2);
    obx_host host = {sizeof host, NULL,       h_log,      h_string, h_int, h_bool,
                     h_double,    h_property, h_complete, h_refuse, NULL};
    char err[256] = "";
    obx_instance *inst = drv->def.create(&host, err, sizeof err);
    CHECK(inst, "create: %s", err);
    if (!inst)
        exit(1);
    const obx_header hdr[] = {
        {"empty", ""},
        {"spaces", "   "},
        {"blanks", " \t "},
        {"kept", "a b"},
        {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"tracestate", "congo=t61rcWkgMzE"}};
    obx_message m = {.token = 200,
                     .event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e02",
                     .event_type = "t",
                     .aggregate_type = "A",
                     .aggregate_id = "1",
                     .destination = "orders",
                     .payload = "{}",
                     .payload_len = 2,
                     .content_type = "application/json",
                     .headers = hdr,
                     .header_count = sizeof hdr / sizeof hdr[0],
                     .attempt = 1};
    obx_status accept;
    struct timespec t0, t1;
    nseen = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(drv->def.publish_batch(inst, &m, 1, &accept) == OBX_OK, "publish_batch");
    size_t left = drv->def.flush(inst, 10000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    drv->def.close(inst);
    drv->def.destroy(inst);
    pthread_join(t, NULL);
    close(stall_fd);
    CHECK(left == 0 && nseen == 1, "flush left %zu in flight, %d outcomes", left, nseen);
    printf("200 with a body that never ends: status %d code %d (%s) after %lld ms\n",
           seen[0].status, seen[0].code, seen[0].detail,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    CHECK(nseen == 1 && seen[0].status == OBX_OK && seen[0].code == 200,
          "stalled body: wanted OK with 200");
    static const char *const want[] = {
        "\r\nX-Header-empty:\r\n", "\r\nX-Header-spaces:\r\n", "\r\nX-Header-blanks:\r\n",
        "\r\nX-Header-kept: a b\r\n",
        /* W3C Trace Context's HTTP names, beside the X-Header- copies */
        "\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n",
        "\r\ntracestate: congo=t61rcWkgMzE\r\n",
        "\r\nX-Header-traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(request, want[i]), "header line %.*s not in the request",
              (int)strlen(want[i]) - 4, want[i] + 2);
}

int main(int argc, char **argv)
{
    char err[1024];
    loaded_driver *drv = argc > 1 ? loader_open(argv[1], "webhook", err, sizeof err) : NULL;
    if (!drv) {
        printf("FAIL: %s\n", argc > 1 ? err : "usage: wh_status DRIVERS_DIR");
        return 1;
    }
    size_t n = 0;
    for (const obx_option *o = drv->def.options; o->name; o++, n++) {
        const obx_option_spec *s = &drv->def.option_specs[n];
        CHECK(!s->default_value || s->min >= s->max ||
                  (atof(s->default_value) >= s->min && atof(s->default_value) <= s->max),
              "option %s: default %s outside %g..%g", o->name, s->default_value, s->min, s->max);
    }
    /* 5 of its own, signing_secret_env, the 5 CloudEvents options (obx/cloudevents.h) */
    CHECK(n == 11 && drv->def.option_specs[n].default_value == NULL, "options/specs: %zu", n);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hooks", closed_port());
    run(drv, sizeof(obx_host));
    run(drv, (uint32_t)offsetof(obx_host, refuse));
    stalled_answer(drv);
    loader_close(drv);
    printf("%s wh_status\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
