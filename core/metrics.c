#include "metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics_server {
    struct MHD_Daemon *daemon;
    relay_state *st;
};

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)upload_size, (void)state;
    metrics_server *srv = cls;
    char body[8192];
    unsigned status = MHD_HTTP_OK;
    if (strcmp(method, "GET") != 0 || strcmp(url, "/metrics") != 0) {
        snprintf(body, sizeof body, "not found: GET /metrics\n");
        status = MHD_HTTP_NOT_FOUND;
    } else {
        relay_stats *e = &srv->st->stats;
        int len = snprintf(body, sizeof body,
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
        for (size_t i = 0; i < srv->st->cfg->output_count && len > 0 && (size_t)len < sizeof body;
             i++) {
            int up;
            long long outages;
            health_read(&srv->st->health[i], &up, &outages);
            len += snprintf(body + len, sizeof body - len, "outbox_relay_output_up{output=\"%s\"} %d\n",
                            srv->st->cfg->outputs[i].name, up);
        }
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

metrics_server *metrics_start(relay_state *st, const char *listen, char *err, size_t err_size)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    int port = colon ? atoi(colon + 1) : 0;
    snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - listen) : 0, listen);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (port <= 0 || port > 65535 ||
        inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &addr.sin_addr) != 1) {
        snprintf(err, err_size, "metrics.listen \"%s\": expected IPV4:PORT, e.g. 127.0.0.1:9187",
                 listen);
        return NULL;
    }
    metrics_server *srv = calloc(1, sizeof *srv);
    srv->st = st;
    srv->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL,
                                   serve, srv, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
    if (!srv->daemon) {
        snprintf(err, err_size, "metrics.listen \"%s\": cannot listen (port in use?)", listen);
        free(srv);
        return NULL;
    }
    return srv;
}

void metrics_stop(metrics_server *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->daemon);
    free(srv);
}
