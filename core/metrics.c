#include "metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listen.h"
#include "log.h"
#include "state.h"

struct metrics_server {
    struct MHD_Daemon *daemon;
    relay_state *st;
};

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, "Allow", "GET");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)upload_size, (void)state;
    metrics_server *srv = cls;
    /* HEAD too: the endpoint is for scrapers, which GET */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET /metrics\n");
    if (strcmp(url, "/metrics") != 0)
        return answer(conn, MHD_HTTP_NOT_FOUND, "not found: GET /metrics\n");
    relay_stats *e = &srv->st->stats;
    char body[8192];
    int len =
        snprintf(body, sizeof body,
                 "# HELP outbox_relay_claimed_total Rows claimed.\n"
                 "# TYPE outbox_relay_claimed_total counter\noutbox_relay_claimed_total %lld\n"
                 "# HELP outbox_relay_published_total Rows marked published after a broker ack.\n"
                 "# TYPE outbox_relay_published_total counter\noutbox_relay_published_total %lld\n"
                 "# HELP outbox_relay_retried_total Failed attempts scheduled for a retry.\n"
                 "# TYPE outbox_relay_retried_total counter\noutbox_relay_retried_total %lld\n"
                 "# HELP outbox_relay_dead_total Rows dead-lettered.\n"
                 "# TYPE outbox_relay_dead_total counter\noutbox_relay_dead_total %lld\n"
                 "# HELP outbox_relay_released_total Leases released unfinished at shutdown.\n"
                 "# TYPE outbox_relay_released_total counter\noutbox_relay_released_total %lld\n"
                 "# HELP outbox_relay_deferred_total Rows put back, no attempt counted, while "
                 "their output was unavailable.\n"
                 "# TYPE outbox_relay_deferred_total counter\noutbox_relay_deferred_total %lld\n"
                 "# HELP outbox_relay_output_up 1 while the output takes messages, 0 while it is "
                 "paused as unavailable.\n# TYPE outbox_relay_output_up gauge\n",
                 atomic_load(&e->claimed), atomic_load(&e->published), atomic_load(&e->retried),
                 atomic_load(&e->dead), atomic_load(&e->released), atomic_load(&e->deferred));
    config_gen *gen = state_take_gen(srv->st); /* the outputs of the running config */
    for (size_t i = 0; i < gen->cfg->output_count && len > 0 && (size_t)len < sizeof body; i++) {
        int up;
        long long outages;
        health_read(&gen->health[i], &up, &outages);
        len += snprintf(body + len, sizeof body - len, "outbox_relay_output_up{output=\"%s\"} %d\n",
                        gen->cfg->outputs[i].name, up);
    }
    gen_release(gen);
    return answer(conn, MHD_HTTP_OK, body);
}

static metrics_server *start(relay_state *st, unsigned flags, const struct sockaddr_in *addr)
{
    metrics_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->st = st;
    /* poll, not select: the relay may hold descriptors above FD_SETSIZE; and
     * not epoll: at the connection limit, libmicrohttpd 0.9.75's epoll loop
     * resumes accepting only when a timeout fires, so a backlog left by a
     * flood of clients drained at about 16 per METRICS_TIMEOUT_S */
    flags |= MHD_USE_POLL_INTERNAL_THREAD;
    uint16_t port = addr ? ntohs(addr->sin_port) : 0;
    srv->daemon =
        addr ? MHD_start_daemon(flags, port, NULL, NULL, serve, srv, MHD_OPTION_SOCK_ADDR, addr,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
                                MHD_OPTION_END)
             : MHD_start_daemon(flags | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, serve, srv,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
                                MHD_OPTION_END);
    if (!srv->daemon) {
        free(srv);
        return NULL;
    }
    return srv;
}

metrics_server *metrics_start(relay_state *st, const char *listen, char *err, size_t err_size)
{
    struct sockaddr_in addr;
    int all = listen_parse(listen, &addr, err, err_size);
    if (all < 0)
        return NULL;
    metrics_server *srv = start(st, 0, &addr);
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

metrics_server *metrics_start_detached(relay_state *st, char *err, size_t err_size)
{
    metrics_server *srv = start(st, 0, NULL);
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
