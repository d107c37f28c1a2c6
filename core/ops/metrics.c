#include "ops/metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/log.h"
#include "config/listen_addr.h"
#include "ops/metrics_sources.h"

struct metrics_server {
    struct MHD_Daemon *daemon;
    source_set *set;
};

/* Answers with body (MUST_FREE: taken) or, when NULL (out of memory), a 500. */
static enum MHD_Result answer_with(struct MHD_Connection *conn, unsigned status, char *body,
                                   size_t len, const char *type)
{
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, "Allow", "GET");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *text)
{
    char *body = strdup(text);
    return answer_with(conn, status, body, body ? strlen(body) : 0, "text/plain");
}

static enum MHD_Result answer_probe(struct MHD_Connection *conn, source_set *set, int ready)
{
    char *body = NULL;
    const char *only = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "source");
    int status = probe_set(set, ready, only, &body);
    return answer_with(conn, (unsigned)status, body, body ? strlen(body) : 0, "application/json");
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)upload_size, (void)state;
    metrics_server *srv = cls;
    /* HEAD too: the endpoints are for scrapers and probes, which GET */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "method not allowed: GET /metrics, /healthz or /readyz\n");
    if (strcmp(url, "/healthz") == 0)
        return answer_probe(conn, srv->set, 0);
    if (strcmp(url, "/readyz") == 0)
        return answer_probe(conn, srv->set, 1);
    if (strcmp(url, "/metrics") != 0)
        return answer(conn, MHD_HTTP_NOT_FOUND, "not found: GET /metrics, /healthz or /readyz\n");
    size_t len = 0;
    char *body = metrics_render_set(srv->set, &len);
    return answer_with(conn, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4");
}

unsigned metrics_connection_limit(void)
{
    struct rlimit rl;
    rlim_t half = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                      ? rl.rlim_cur / 2
                      : METRICS_MAX_CONNECTIONS;
    if (half < METRICS_MIN_CONNECTIONS)
        return METRICS_MIN_CONNECTIONS;
    return half > METRICS_MAX_CONNECTIONS ? METRICS_MAX_CONNECTIONS : (unsigned)half;
}

static metrics_server *start(source_set *set, unsigned flags, const struct sockaddr_in *addr)
{
    metrics_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->set = set;
    /* poll, not select: the relay may hold descriptors above FD_SETSIZE; and
     * not epoll: at the connection limit, libmicrohttpd 0.9.75's epoll loop
     * resumes accepting only when a timeout fires, so a backlog left by a
     * flood of clients drained at about one limit's worth per METRICS_TIMEOUT_S */
    flags |= MHD_USE_POLL_INTERNAL_THREAD;
    uint16_t port = addr ? ntohs(addr->sin_port) : 0;
    unsigned limit = metrics_connection_limit();
    struct MHD_OptionItem limits[] = {
        {MHD_OPTION_CONNECTION_LIMIT, limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, limit * 3 / 4, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, METRICS_TIMEOUT_S, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, METRICS_CONNECTION_MEMORY, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->daemon = addr ? MHD_start_daemon(flags, port, NULL, NULL, serve, srv, MHD_OPTION_SOCK_ADDR,
                                          addr, MHD_OPTION_ARRAY, limits, MHD_OPTION_END)
                       : MHD_start_daemon(flags | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, serve,
                                          srv, MHD_OPTION_ARRAY, limits, MHD_OPTION_END);
    if (!srv->daemon) {
        free(srv);
        return NULL;
    }
    return srv;
}

metrics_server *metrics_start(source_set *set, const char *listen, char *err, size_t err_size)
{
    struct sockaddr_in addr;
    int all = listen_parse(listen, &addr, err, err_size);
    if (all < 0)
        return NULL;
    metrics_server *srv = start(set, 0, &addr);
    if (!srv) {
        snprintf(err, err_size, "metrics.listen \"%s\": cannot listen (port in use?)", listen);
        return NULL;
    }
    if (all)
        log_warn("metrics.listen \"%s\" serves every network interface: anyone who can reach "
                 "this host can read the counters; bind 127.0.0.1 unless a scraper elsewhere "
                 "needs it",
                 listen);
    return srv;
}

metrics_server *metrics_start_detached(source_set *set, char *err, size_t err_size)
{
    metrics_server *srv = start(set, 0, NULL);
    if (!srv)
        snprintf(err, err_size, "metrics: cannot start the HTTP server");
    return srv;
}

int metrics_add_connection(metrics_server *srv, int fd)
{
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return MHD_add_connection(srv->daemon, fd, (const struct sockaddr *)&peer, sizeof peer) ==
                   MHD_YES
               ? 0
               : -1;
}

void metrics_stop(metrics_server *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->daemon);
    free(srv);
}
