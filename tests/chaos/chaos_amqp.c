/*
 * chaos_amqp: records every message of a durable RabbitMQ queue as history
 * lines (history.h), each written before its manual ack, until SIGTERM.
 * Declares the queue, reconnects (every 200 ms) after a broker restart or a
 * closed connection; what was not acked comes again with redelivered set.
 *
 *   chaos_amqp -u AMQP_URL -q QUEUE -o HISTORY_FILE
 */
#include <signal.h>
#include <unistd.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "history.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int ok(amqp_rpc_reply_t r)
{
    return r.reply_type == AMQP_RESPONSE_NORMAL;
}

/* A connection consuming QUEUE on channel 1, or NULL. */
static amqp_connection_state_t open_consumer(const char *url_text, const char *queue)
{
    char url[1024];
    struct amqp_connection_info ci;
    snprintf(url, sizeof url, "%s", url_text);
    amqp_default_connection_info(&ci);
    if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK)
        return NULL;
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    struct timeval tv = {2, 0};
    if (!s || amqp_socket_open_noblock(s, ci.host, ci.port, &tv) != AMQP_STATUS_OK)
        goto fail;
    if (!ok(amqp_login(c, ci.vhost, 0, 131072, 10, AMQP_SASL_METHOD_PLAIN, ci.user, ci.password)))
        goto fail;
    amqp_channel_open(c, 1);
    if (!ok(amqp_get_rpc_reply(c)))
        goto fail;
    amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
    if (!ok(amqp_get_rpc_reply(c)))
        goto fail;
    amqp_basic_qos(c, 1, 0, 200, 0);
    if (!ok(amqp_get_rpc_reply(c)))
        goto fail;
    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    if (!ok(amqp_get_rpc_reply(c)))
        goto fail;
    return c;
fail:
    amqp_destroy_connection(c);
    return NULL;
}

static void header(const amqp_basic_properties_t *p, const char *key, char *buf, size_t size)
{
    size_t len = strlen(key);
    buf[0] = '\0';
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG))
        return;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (e->key.len == len && !memcmp(e->key.bytes, key, len) &&
            e->value.kind == AMQP_FIELD_KIND_UTF8) {
            size_t n = e->value.value.bytes.len < size - 1 ? e->value.value.bytes.len : size - 1;
            memcpy(buf, e->value.value.bytes.bytes, n);
            buf[n] = '\0';
        }
    }
}

int main(int argc, char **argv)
{
    const char *url = NULL, *queue = NULL, *path = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "u:q:o:")) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 'q': queue = optarg; break;
        case 'o': path = optarg; break;
        default: return 2;
        }
    }
    if (!url || !queue || !path) {
        fprintf(stderr, "usage: chaos_amqp -u URL -q QUEUE -o FILE\n");
        return 2;
    }
    FILE *out = fopen(path, "a");
    if (!out) {
        perror(path);
        return 2;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    long long got = 0, reconnects = 0;
    amqp_connection_state_t c = NULL;
    while (!stop) {
        if (!c) {
            if (!(c = open_consumer(url, queue))) {
                usleep(200 * 1000);
                continue;
            }
            reconnects++;
        }
        struct timeval tv = {0, 200 * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            continue;
        if (!ok(r)) { /* connection closed or broker gone: start over */
            amqp_destroy_connection(c);
            c = NULL;
            continue;
        }
        char eid[128], agg[128];
        header(&env.message.properties, "event_id", eid, sizeof eid);
        header(&env.message.properties, "aggregate_id", agg, sizeof agg);
        history_write(out, eid, agg, history_seq(env.message.body.bytes, env.message.body.len),
                      env.redelivered != 0);
        got++;
        if (amqp_basic_ack(c, 1, env.delivery_tag, 0) != AMQP_STATUS_OK) {
            amqp_destroy_envelope(&env);
            amqp_destroy_connection(c);
            c = NULL;
            continue;
        }
        amqp_destroy_envelope(&env);
    }
    if (c) {
        amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
        amqp_connection_close(c, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(c);
    }
    fclose(out);
    fprintf(stderr, "chaos_amqp: %lld messages, %lld connections\n", got, reconnects);
    return 0;
}
