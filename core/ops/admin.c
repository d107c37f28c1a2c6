#include "ops/admin.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/listen_addr.h"
#include "db/db.h"
#include "ops/control.h"

struct admin_server {
    struct MHD_Daemon *daemon;
    char *path; /* the config file, read again at each request: reloads add sources */
    char *token;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, "Allow", "POST");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* The Authorization header is "Bearer <token>": compared in constant time. */
static int authorized(const admin_server *srv, struct MHD_Connection *conn)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0)
        return 0;
    const char *given = h + 7;
    size_t n = strlen(srv->token), m = strlen(given);
    unsigned char diff = n != m;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(srv->token[i] ^ given[i < m ? i : 0]);
    return diff == 0;
}

/* Writes the control row of one source on a connection of its own (admin is
 * rare); 1 when it changed, 0 when it was so already, -1 (logged). */
static int set_control(const relay_config *cfg, int pause, const char *output, const char *reason)
{
    char err[512];
    PGconn *db = db_connect(cfg, "outbox-relay admin", err, sizeof err);
    int rc = db ? control_set(db, cfg, output ? CONTROL_OUTPUT : CONTROL_SOURCE,
                              output ? output : "", pause, pause ? reason : NULL, err, sizeof err)
                : -1;
    PQfinish(db);
    if (rc < 0)
        log_warn("admin: %s%s%s failed: %s", pause ? "pause" : "resume",
                 cfg->source_name ? " in source " : "", cfg->source_name ? cfg->source_name : "",
                 err);
    return rc;
}

/* Pauses or resumes in every source of the config, or the one ?source= names. */
static enum MHD_Result act(admin_server *srv, struct MHD_Connection *conn, int pause,
                           const char *output)
{
    char err[1024];
    size_t count;
    relay_config **cfgs = config_load_all(srv->path, &count, err, sizeof err);
    if (!cfgs) {
        log_warn("admin: cannot read the config: %s", err);
        return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                     "the config cannot be read: see the log\n");
    }
    const char *only = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "source");
    const char *reason = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "reason");
    int known = !output, chosen = 0, changed = 0, failed = 0;
    for (size_t i = 0; output && i < cfgs[0]->output_count; i++) /* outputs are shared */
        known |= strcmp(cfgs[0]->outputs[i].name, output) == 0;
    for (size_t i = 0; known && i < count; i++) {
        if (only && (!cfgs[i]->source_name || strcmp(cfgs[i]->source_name, only) != 0))
            continue;
        chosen++;
        int rc = set_control(cfgs[i], pause, output, reason);
        failed |= rc < 0;
        changed |= rc > 0;
    }
    config_free_all(cfgs, count);
    if (!known)
        return reply(conn, MHD_HTTP_NOT_FOUND, "no output \"%s\"\n", output);
    if (!chosen)
        return reply(conn, MHD_HTTP_NOT_FOUND, "no source \"%s\"\n", only);
    if (failed)
        return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s failed: the database: see the log\n",
                     pause ? "pause" : "resume");
    log_info("admin: %s%s %s%s%s%s", output ? "output " : "the source", output ? output : "",
             pause ? "paused" : "resumed", only ? " in source " : "", only ? only : "",
             changed ? "" : " (already so)");
    return reply(conn, MHD_HTTP_OK, "%s%s %s%s\n", output ? "output " : "the source",
                 output ? output : "", pause ? "paused" : "resumed", changed ? "" : " already");
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **state)
{
    (void)version, (void)upload;
    admin_server *srv = cls;
    if (!*state) { /* the first call of a request: its headers only */
        *state = srv;
        return MHD_YES;
    }
    if (*upload_size) { /* a body is not expected: ignored */
        *upload_size = 0;
        return MHD_YES;
    }
    if (!authorized(srv, conn))
        return reply(conn, MHD_HTTP_UNAUTHORIZED, "a bearer token is required\n");
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST /pause/... or /resume/...\n");
    int pause = strncmp(url, "/pause/", 7) == 0;
    const char *what = pause ? url + 7 : strncmp(url, "/resume/", 8) == 0 ? url + 8 : NULL;
    if (what && strcmp(what, "source") == 0)
        return act(srv, conn, pause, NULL);
    if (what && strncmp(what, "output/", 7) == 0 && what[7])
        return act(srv, conn, pause, what + 7);
    return reply(conn, MHD_HTTP_NOT_FOUND,
                 "not found: POST /pause/output/NAME, /resume/output/NAME, /pause/source or "
                 "/resume/source\n");
}

admin_server *admin_start(const relay_config *cfg, char *err, size_t err_size)
{
    const char *token = getenv(cfg->admin_token_env);
    if (!token || strlen(token) < ADMIN_TOKEN_MIN) {
        snprintf(err, err_size,
                 "admin.listen is set, but %s %s: the admin endpoint needs a token of at least "
                 "%d characters there",
                 cfg->admin_token_env, token ? "is too short" : "is not set", ADMIN_TOKEN_MIN);
        return NULL;
    }
    struct sockaddr_in addr;
    if (listen_parse(cfg->admin_listen, &addr, err, err_size) < 0)
        return NULL;
    admin_server *srv = calloc(1, sizeof *srv);
    srv->path = strdup(cfg->path);
    srv->token = strdup(token);
    srv->daemon =
        MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD, ntohs(addr.sin_port), NULL, NULL, serve, srv,
                         MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_CONNECTION_LIMIT, 16u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!srv->daemon) {
        snprintf(err, err_size, "admin.listen \"%s\": cannot listen (port in use?)",
                 cfg->admin_listen);
        admin_stop(srv);
        return NULL;
    }
    return srv;
}

void admin_stop(admin_server *srv)
{
    if (!srv)
        return;
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    free(srv->token);
    free(srv->path);
    free(srv);
}
