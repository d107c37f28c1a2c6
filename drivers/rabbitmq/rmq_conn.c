/*
 * RabbitMQ driver: connecting, declaring, reconnect backoff and exchange checks.
 *
 * Every blocking call is bounded: the socket connect, the login handshake and
 * each RPC use connect_timeout_ms, so a dead or silent broker never hangs the
 * calling worker. Errors never contain the password (only host, port, vhost
 * and the broker's reply text).
 */
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "rmq_confirm.h"
#include "rmq_conn.h"

#define RMQ_BACKOFF_FIRST_MS 200
#define RMQ_BACKOFF_MAX_MS 5000
#define RMQ_EXCHANGE_CACHE_MAX 1024

void rmq_reply_text(amqp_rpc_reply_t r, const char *what, char *buf, size_t size)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL: snprintf(buf, size, "%s: ok", what); break;
    case AMQP_RESPONSE_NONE: snprintf(buf, size, "%s: no reply from broker", what); break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(buf, size, "%s: %s", what, amqp_error_string2(r.library_error));
        break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            const amqp_connection_close_t *m = r.reply.decoded;
            snprintf(buf, size, "%s: broker closed the connection: %.*s", what,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const amqp_channel_close_t *m = r.reply.decoded;
            snprintf(buf, size, "%s: broker closed the channel: %.*s", what, (int)m->reply_text.len,
                     (const char *)m->reply_text.bytes);
        } else {
            snprintf(buf, size, "%s: unexpected broker method 0x%08x", what, (unsigned)r.reply.id);
        }
        break;
    }
}

static struct timeval rmq_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* Checks the reply of the last RPC on conn; fills last_error on failure. */
static int rmq_rpc_ok(obx_instance *inst, amqp_connection_state_t conn, const char *what)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    rmq_reply_text(r, what, inst->last_error, sizeof(inst->last_error));
    return -1;
}

static amqp_bytes_t rmq_bytes(const char *s)
{
    return amqp_cstring_bytes(s); /* rabbitmq-c takes char*, never writes it */
}

static int rmq_declare(obx_instance *inst, amqp_connection_state_t conn)
{
    if (inst->declare_exchange) {
        amqp_exchange_declare(conn, RMQ_CHANNEL, rmq_bytes(inst->declare_exchange),
                              rmq_bytes(inst->declare_exchange_type), 0, 1, 0, 0, amqp_empty_table);
        if (rmq_rpc_ok(inst, conn, "declare exchange") != 0)
            return -1;
    }
    if (inst->declare_queue) {
        amqp_queue_declare(conn, RMQ_CHANNEL, rmq_bytes(inst->declare_queue), 0, 1, 0, 0,
                           amqp_empty_table);
        if (rmq_rpc_ok(inst, conn, "declare queue") != 0)
            return -1;
    }
    if (inst->bind_routing_key) {
        amqp_queue_bind(conn, RMQ_CHANNEL, rmq_bytes(inst->declare_queue),
                        rmq_bytes(inst->declare_exchange), rmq_bytes(inst->bind_routing_key),
                        amqp_empty_table);
        if (rmq_rpc_ok(inst, conn, "bind queue") != 0)
            return -1;
    }
    return 0;
}

static void rmq_schedule_retry(obx_instance *inst)
{
    inst->backoff_ms = inst->backoff_ms ? inst->backoff_ms * 2 : RMQ_BACKOFF_FIRST_MS;
    if (inst->backoff_ms > RMQ_BACKOFF_MAX_MS)
        inst->backoff_ms = RMQ_BACKOFF_MAX_MS;
    inst->next_connect_ms = rmq_now_ms() + inst->backoff_ms;
}

static amqp_socket_t *rmq_socket(obx_instance *inst, amqp_connection_state_t conn)
{
    if (!inst->ssl)
        return amqp_tcp_socket_new(conn);
    amqp_socket_t *sock = amqp_ssl_socket_new(conn);
    if (!sock)
        return NULL;
    amqp_ssl_socket_set_verify_peer(sock, inst->tls_verify);
    amqp_ssl_socket_set_verify_hostname(sock, inst->tls_verify);
    if (inst->tls_ca && amqp_ssl_socket_set_cacert(sock, inst->tls_ca) != AMQP_STATUS_OK) {
        snprintf(inst->last_error, sizeof(inst->last_error), "cannot load tls_ca %s", inst->tls_ca);
        return NULL;
    }
    if (inst->tls_cert &&
        amqp_ssl_socket_set_key(sock, inst->tls_cert, inst->tls_key) != AMQP_STATUS_OK) {
        snprintf(inst->last_error, sizeof(inst->last_error), "cannot load tls_cert/tls_key %s",
                 inst->tls_cert);
        return NULL;
    }
    return sock;
}

/* Opens the publishing channel in confirm mode; its delivery tags start at 1. */
int rmq_open_publishing(obx_instance *inst, amqp_connection_state_t conn)
{
    amqp_channel_open(conn, RMQ_CHANNEL);
    if (rmq_rpc_ok(inst, conn, "channel.open") != 0)
        return -1;
    amqp_confirm_select(conn, RMQ_CHANNEL);
    if (rmq_rpc_ok(inst, conn, "confirm.select") != 0)
        return -1;
    inst->base_tag = inst->next_tag = 1;
    inst->answered_tag = 0;
    inst->head = 0;
    return 0;
}

/* rabbitmq-c 0.11 advertises no `connection.blocked` capability, and a broker
 * only tells the clients that do when a resource alarm stops it reading
 * their publishes. The table is merged into the library's own. */
static amqp_rpc_reply_t rmq_login(obx_instance *inst, amqp_connection_state_t conn)
{
    amqp_table_entry_t caps[] = {
        {amqp_cstring_bytes("connection.blocked"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("publisher_confirms"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("basic.nack"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
    };
    amqp_table_entry_t props[] = {
        {amqp_cstring_bytes("capabilities"),
         {AMQP_FIELD_KIND_TABLE, {.table = {(int)(sizeof caps / sizeof *caps), caps}}}},
    };
    amqp_table_t table = {(int)(sizeof props / sizeof *props), props};
    int heartbeat_s = (int)(((int64_t)inst->heartbeat_ms + 999) / 1000); /* AMQP counts seconds */
    return amqp_login_with_properties(conn, inst->vhost, 0, 131072, heartbeat_s, &table,
                                      AMQP_SASL_METHOD_PLAIN, inst->user, inst->password);
}

/* rabbitmq-c writes a publish with no deadline: it waits for the socket as
 * long as the broker's heartbeats come, and a broker under a resource alarm
 * stops reading but keeps sending them. The kernel bounds it instead: with
 * TCP_USER_TIMEOUT, data the broker does not take for that long (its window
 * stays shut) aborts the connection, and the write fails. */
static void rmq_bound_writes(obx_instance *inst, amqp_connection_state_t conn)
{
    unsigned ms = (unsigned)inst->write_timeout_ms;
    int fd = amqp_get_sockfd(conn);
    if (ms > 0 && fd >= 0 && setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0)
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "cannot bound writes to %d ms (TCP_USER_TIMEOUT): a stalled broker can "
                        "block a publish",
                        inst->write_timeout_ms);
}

int rmq_connect(obx_instance *inst)
{
    char where[160];
    snprintf(where, sizeof(where), "%s://%s:%d vhost %s", inst->ssl ? "amqps" : "amqp",
             inst->host_name, inst->port, inst->vhost);
    amqp_connection_state_t conn = amqp_new_connection();
    if (!conn) {
        snprintf(inst->last_error, sizeof(inst->last_error), "out of memory");
        rmq_schedule_retry(inst);
        return -1;
    }
    struct timeval tv = rmq_tv(inst->connect_timeout_ms);
    int logged_in = 0;
    snprintf(inst->last_error, sizeof(inst->last_error), "cannot create socket");
    amqp_socket_t *sock = rmq_socket(inst, conn);
    if (!sock)
        goto fail;
    int rc = amqp_socket_open_noblock(sock, inst->host_name, inst->port, &tv);
    if (rc != AMQP_STATUS_OK) {
        snprintf(inst->last_error, sizeof(inst->last_error), "connect to %s: %s", where,
                 amqp_error_string2(rc));
        goto fail;
    }
    rmq_bound_writes(inst, conn);
    amqp_set_handshake_timeout(conn, &tv);
    amqp_set_rpc_timeout(conn, &tv);
    amqp_rpc_reply_t r = rmq_login(inst, conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        char what[200];
        snprintf(what, sizeof(what), "login to %s as %s", where, inst->user);
        rmq_reply_text(r, what, inst->last_error, sizeof(inst->last_error));
        /* TLS 1.3: the broker judges the client certificate after the
         * client's handshake is done, and its refusal (an alert) only
         * surfaces at the login's first read, as a bare "SSL error" */
        if (inst->ssl && r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_SSL_ERROR) {
            size_t n = strlen(inst->last_error);
            snprintf(inst->last_error + n, sizeof(inst->last_error) - n, "%s",
                     inst->tls_cert ? " (the broker may have refused the client certificate: "
                                      "is tls_cert signed by a CA the broker trusts?)"
                                    : " (the broker may require a client certificate: "
                                      "tls_cert and tls_key)");
        }
        goto fail;
    }
    logged_in = 1;
    if (rmq_open_publishing(inst, conn) != 0 || rmq_declare(inst, conn) != 0)
        goto fail;

    inst->conn = conn;
    /* channel_max 0 is "no limit"; 1 leaves no second channel for checks */
    inst->check_channel = amqp_get_channel_max(conn) == 1 ? RMQ_CHANNEL : RMQ_CHECK_CHANNEL;
    inst->backoff_ms = 0;
    inst->blocked = 0;
    inst->check_channel_open = 0;
    inst->last_error[0] = '\0';
    inst->host->log(inst->host->host_ctx, OBX_LOG_INFO, "connected to %s", where);
    return 0;

fail:
    if (logged_in) {
        struct timeval quick = rmq_tv(1000);
        amqp_set_rpc_timeout(conn, &quick);
        amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(conn);
    rmq_schedule_retry(inst);
    return -1;
}

int rmq_ensure_connected(obx_instance *inst)
{
    if (inst->conn)
        return 0;
    if (inst->closed || rmq_now_ms() < inst->next_connect_ms)
        return -1;
    if (rmq_connect(inst) == 0)
        return 0;
    inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "%s (retry in %d ms)", inst->last_error,
                    inst->backoff_ms);
    return -1;
}

static void rmq_forget_exchanges(obx_instance *inst)
{
    for (size_t i = 0; i < inst->exchange_count; i++)
        free(inst->exchanges[i].name);
    inst->exchange_count = 0;
}

void rmq_disconnect(obx_instance *inst, const char *why, int graceful)
{
    if (!inst->conn)
        return;
    /* lost before their confirms: the broker, not the messages, is at fault */
    rmq_fail_pending(inst, rmq_unavailable(inst), why);
    if (!inst->closed)
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "%s; reconnecting", why);
    if (why != inst->last_error)
        snprintf(inst->last_error, sizeof(inst->last_error), "%s", why);
    if (graceful) {
        struct timeval quick = rmq_tv(1000);
        amqp_set_rpc_timeout(inst->conn, &quick);
        amqp_connection_close(inst->conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(inst->conn);
    inst->conn = NULL;
    inst->backoff_ms = 0;
    inst->next_connect_ms = rmq_now_ms(); /* first reconnect at once, then back off */
    rmq_forget_exchanges(inst);
}

static rmq_exchange *rmq_lookup_exchange(obx_instance *inst, const char *name, size_t len)
{
    for (size_t i = 0; i < inst->exchange_count; i++)
        if (strlen(inst->exchanges[i].name) == len &&
            memcmp(inst->exchanges[i].name, name, len) == 0)
            return &inst->exchanges[i];
    return NULL;
}

/* Is the exchange to be checked on the broker? Only one known to exist is
 * cached: a missing one is asked for again before each event is declared
 * unroutable, so an exchange created again is used at once. */
static int rmq_check_due(const rmq_exchange *x)
{
    return x->missing != 0;
}

int rmq_exchange_unchecked(obx_instance *inst, const char *name, size_t len)
{
    if (len == 0 || !inst->check_exchanges)
        return 0;
    rmq_exchange *x = rmq_lookup_exchange(inst, name, len);
    return !x || rmq_check_due(x);
}

static rmq_exchange *rmq_find_exchange(obx_instance *inst, const char *name, size_t len)
{
    rmq_exchange *known = rmq_lookup_exchange(inst, name, len);
    if (known)
        return known;
    if (inst->exchange_count >= RMQ_EXCHANGE_CACHE_MAX)
        rmq_forget_exchanges(inst); /* templated exchange names must not grow it forever */
    rmq_exchange *grown = realloc(inst->exchanges, (inst->exchange_count + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    inst->exchanges = grown;
    rmq_exchange *x = &grown[inst->exchange_count];
    x->name = strndup(name, len);
    if (!x->name)
        return NULL;
    x->missing = -1; /* unknown */
    inst->exchange_count++;
    return x;
}

/* Publishing to a missing exchange makes the broker close the publishing
 * channel (rmq_channel.c then has to find which event it was). A passive
 * declare on a separate channel (once per existing exchange; before every
 * event to a missing one) finds that out first and only that message fails,
 * with the broker's own text. */
int rmq_exchange_exists(obx_instance *inst, const char *name, size_t len, char *why,
                        size_t why_size)
{
    if (len == 0 || !inst->check_exchanges)
        return 1;
    rmq_exchange *x = rmq_find_exchange(inst, name, len);
    if (!x)
        return 1; /* out of memory: let the broker decide */
    if (!rmq_check_due(x))
        return 1;
    int shared = inst->check_channel == RMQ_CHANNEL;
    if (shared && inst->pending > 0)
        return 1; /* the caller could not settle them: let the broker decide */
    if (!shared && !inst->check_channel_open) {
        amqp_channel_open(inst->conn, RMQ_CHECK_CHANNEL);
        if (rmq_rpc_ok(inst, inst->conn, "channel.open") != 0) {
            rmq_disconnect(inst, inst->last_error, 0);
            return -1;
        }
        inst->check_channel_open = 1;
    }
    amqp_bytes_t xname = {len, (void *)name};
    amqp_exchange_declare(inst->conn, inst->check_channel, xname, rmq_bytes("direct"), 1, 0, 0, 0,
                          amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(inst->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        x->missing = 0;
        return 1;
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = r.reply.decoded;
        snprintf(why, why_size, "%.*s", (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        amqp_channel_close_ok_t ok = {0};
        inst->check_channel_open = 0;
        if (amqp_send_method(inst->conn, inst->check_channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) <
            0) {
            rmq_disconnect(inst, "connection lost", 0);
            return -1;
        }
        /* the only channel: nothing was unconfirmed on it, open it again */
        if (shared && rmq_open_publishing(inst, inst->conn) != 0) {
            rmq_disconnect(inst, inst->last_error, 0);
            return -1;
        }
        x->missing = 1;
        return 0;
    }
    char text[256];
    rmq_reply_text(r, "exchange check", text, sizeof(text));
    rmq_disconnect(inst, text, 0);
    return -1;
}
