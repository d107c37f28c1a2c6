/*
 * rconsume: reads a RabbitMQ queue back for the tests and checks what the
 * relay sent.
 *
 *   rconsume URL declare QUEUE [EXCHANGE ROUTING_KEY]   durable queue (+ topic exchange, binding)
 *   rconsume URL declare-bounded QUEUE MAX   durable queue of MAX messages that refuses more
 *                                             (x-overflow reject-publish: the broker nacks them)
 *   rconsume URL purge QUEUE
 *   rconsume URL dump QUEUE EXPECTED IDLE_MS   each message as a JSON line (rdump.c)
 *   rconsume URL delete QUEUE [EXCHANGE]
 *   rconsume URL read QUEUE EXPECTED IDLE_MS [--header-n KEY PREFIX] [--content-type CT]
 *                     [--ids FILE [--id-header KEY]] [--pace-us US]
 *
 * read consumes until EXPECTED distinct event ids arrived (then lingers a
 * little to count late duplicates) or nothing came for IDLE_MS. It checks on
 * every message: delivery_mode 2, message_id == headers.event_id, type ==
 * headers.event_type, a timestamp, the content type, the headers
 * aggregate_type/aggregate_id/event_id/event_type/created_at, optionally
 * headers[KEY] == PREFIX<n>; and per aggregate that first deliveries come in
 * increasing n (the payload's "n"). --ids writes every delivery's event id,
 * one a line in arrival order, so a test can compare the set with its table;
 * with --id-header, each followed by a tab and the value of header KEY.
 * --pace-us makes a slow consumer: 10 messages prefetched, each acked, then a
 * pause of US microseconds (a bounded queue fills while it reads).
 * Prints one summary line; exits 0 only when unique == EXPECTED and no check
 * failed.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "delivery.h"
#include "rdump.h"

static void die_reply(amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        fprintf(stderr, "rconsume: %s: %s\n", what, amqp_error_string2(r.library_error));
    else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
             r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *m = r.reply.decoded;
        fprintf(stderr, "rconsume: %s: %.*s\n", what, (int)m->reply_text.len,
                (char *)m->reply_text.bytes);
    } else
        fprintf(stderr, "rconsume: %s: failed (reply type %d)\n", what, (int)r.reply_type);
    exit(2);
}

static amqp_connection_state_t connect_url(const char *url_in)
{
    char *url = strdup(url_in);
    struct amqp_connection_info ci;
    amqp_default_connection_info(&ci);
    if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK) {
        fprintf(stderr, "rconsume: bad url\n");
        exit(2);
    }
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *sock = amqp_tcp_socket_new(conn);
    struct timeval tv = {10, 0};
    int rc = amqp_socket_open_noblock(sock, ci.host, ci.port, &tv);
    if (rc != AMQP_STATUS_OK) {
        fprintf(stderr, "rconsume: connect %s:%d: %s\n", ci.host, ci.port, amqp_error_string2(rc));
        exit(2);
    }
    amqp_set_rpc_timeout(conn, &tv);
    die_reply(amqp_login(conn, ci.vhost && *ci.vhost ? ci.vhost : "/", 0, 131072, 0,
                         AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
              "login");
    amqp_channel_open(conn, 1);
    die_reply(amqp_get_rpc_reply(conn), "channel.open");
    free(url);
    return conn;
}

static const amqp_field_value_t *header(const amqp_table_t *t, const char *key)
{
    size_t len = strlen(key);
    for (int i = 0; i < t->num_entries; i++)
        if (t->entries[i].key.len == len && memcmp(t->entries[i].key.bytes, key, len) == 0)
            return &t->entries[i].value;
    return NULL;
}

static int bytes_eq(amqp_bytes_t b, const char *s, size_t len)
{
    return b.len == len && memcmp(b.bytes, s, len) == 0;
}

static long bad_count;
static void bad(const char *what, long n)
{
    if (bad_count++ < 10)
        fprintf(stderr, "rconsume: message n=%ld: %s\n", n, what);
}

static long payload_n(amqp_bytes_t body)
{
    const char *p = memmem(body.bytes, body.len, "\"n\"", 3);
    if (!p)
        return -1;
    p += 3;
    const char *end = (const char *)body.bytes + body.len;
    while (p < end && (*p == ' ' || *p == ':'))
        p++;
    return p < end ? strtol(p, NULL, 10) : -1;
}

static int do_read(amqp_connection_state_t conn, const char *queue, long expected, int idle_ms,
                   const char *hkey, const char *hprefix, const char *ctype, FILE *ids,
                   const char *id_header, long pace_us)
{
    long ack_every = pace_us ? 1 : 500;
    amqp_basic_qos(conn, 1, 0, pace_us ? 10 : 2000, 0);
    die_reply(amqp_get_rpc_reply(conn), "basic.qos");
    amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    die_reply(amqp_get_rpc_reply(conn), "basic.consume");

    delivery *seen = delivery_new("rconsume");
    long received = 0, unacked = 0;
    uint64_t last_tag = 0;
    for (;;) {
        int wait = (long)delivery_unique(seen) >= expected
                       ? 500
                       : idle_ms; /* linger briefly for late duplicates */
        struct timeval tv = {wait / 1000, (wait % 1000) * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(conn);
        amqp_rpc_reply_t r = amqp_consume_message(conn, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            break;
        die_reply(r, "consume");
        received++;
        last_tag = env.delivery_tag;
        if (++unacked >= ack_every) {
            amqp_basic_ack(conn, 1, last_tag, 1);
            unacked = 0;
        }
        if (pace_us)
            usleep((useconds_t)pace_us);
        amqp_basic_properties_t *p = &env.message.properties;
        long n = payload_n(env.message.body);
        const amqp_field_value_t *eid = NULL, *etype = NULL, *agg = NULL;
        if (p->_flags & AMQP_BASIC_HEADERS_FLAG) {
            eid = header(&p->headers, "event_id");
            etype = header(&p->headers, "event_type");
            agg = header(&p->headers, "aggregate_id");
            if (!header(&p->headers, "aggregate_type") || !header(&p->headers, "created_at"))
                bad("missing aggregate_type/created_at header", n);
            if (hkey) {
                const amqp_field_value_t *h = header(&p->headers, hkey);
                char want[128];
                snprintf(want, sizeof(want), "%s%ld", hprefix, n);
                if (!h || h->kind != AMQP_FIELD_KIND_UTF8 ||
                    !bytes_eq(h->value.bytes, want, strlen(want)))
                    bad("custom header missing or wrong", n);
            }
        }
        if (!eid || !etype || !agg || eid->kind != AMQP_FIELD_KIND_UTF8 ||
            agg->kind != AMQP_FIELD_KIND_UTF8) {
            bad("missing event_id/event_type/aggregate_id header", n);
            amqp_destroy_envelope(&env);
            continue;
        }
        if (!(p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG) || p->delivery_mode != 2)
            bad("not persistent (delivery_mode != 2)", n);
        if (!(p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) ||
            !bytes_eq(p->message_id, eid->value.bytes.bytes, eid->value.bytes.len))
            bad("message_id != event_id header", n);
        if (!(p->_flags & AMQP_BASIC_TYPE_FLAG) ||
            !bytes_eq(p->type, etype->value.bytes.bytes, etype->value.bytes.len))
            bad("type != event_type header", n);
        if (!(p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) || p->timestamp < 1000000000)
            bad("no timestamp", n);
        if (ctype && (!(p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) ||
                      !bytes_eq(p->content_type, ctype, strlen(ctype))))
            bad("wrong content_type", n);
        if (n < 0)
            bad("payload has no \"n\"", n);

        if (ids) {
            const amqp_field_value_t *v = id_header ? header(&p->headers, id_header) : NULL;
            fprintf(ids, "%.*s", (int)eid->value.bytes.len, (const char *)eid->value.bytes.bytes);
            if (id_header && v && v->kind == AMQP_FIELD_KIND_UTF8)
                fprintf(ids, "\t%.*s", (int)v->value.bytes.len, (const char *)v->value.bytes.bytes);
            fputc('\n', ids);
        }
        delivery_add(seen, eid->value.bytes.bytes, eid->value.bytes.len, agg->value.bytes.bytes,
                     agg->value.bytes.len, n);
        amqp_destroy_envelope(&env);
    }
    if (unacked)
        amqp_basic_ack(conn, 1, last_tag, 1);
    long unique = (long)delivery_unique(seen), order = (long)delivery_order_breaks(seen);
    printf("received=%ld unique=%ld duplicates=%zu order_violations=%ld bad=%ld aggregates=%zu\n",
           received, unique, delivery_duplicates(seen), order, bad_count,
           delivery_aggregates(seen));
    delivery_free(seen);
    return unique == expected && order == 0 && bad_count == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: rconsume URL declare|purge|read QUEUE ...\n");
        return 2;
    }
    amqp_connection_state_t conn = connect_url(argv[1]);
    const char *cmd = argv[2], *queue = argv[3];
    int rc = 0;
    if (strcmp(cmd, "declare") == 0) {
        amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
        die_reply(amqp_get_rpc_reply(conn), "queue.declare");
        if (argc >= 6) {
            amqp_exchange_declare(conn, 1, amqp_cstring_bytes(argv[4]), amqp_cstring_bytes("topic"),
                                  0, 1, 0, 0, amqp_empty_table);
            die_reply(amqp_get_rpc_reply(conn), "exchange.declare");
            amqp_queue_bind(conn, 1, amqp_cstring_bytes(queue), amqp_cstring_bytes(argv[4]),
                            amqp_cstring_bytes(argv[5]), amqp_empty_table);
            die_reply(amqp_get_rpc_reply(conn), "queue.bind");
        }
    } else if (strcmp(cmd, "declare-bounded") == 0 && argc >= 5) {
        amqp_table_entry_t args[2];
        args[0].key = amqp_cstring_bytes("x-max-length");
        args[0].value.kind = AMQP_FIELD_KIND_I64;
        args[0].value.value.i64 = atol(argv[4]);
        args[1].key = amqp_cstring_bytes("x-overflow");
        args[1].value.kind = AMQP_FIELD_KIND_UTF8;
        args[1].value.value.bytes = amqp_cstring_bytes("reject-publish");
        amqp_table_t table = {2, args};
        amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, table);
        die_reply(amqp_get_rpc_reply(conn), "queue.declare");
    } else if (strcmp(cmd, "purge") == 0) {
        amqp_queue_purge(conn, 1, amqp_cstring_bytes(queue));
        die_reply(amqp_get_rpc_reply(conn), "queue.purge");
    } else if (strcmp(cmd, "delete") == 0) {
        amqp_queue_delete(conn, 1, amqp_cstring_bytes(queue), 0, 0);
        die_reply(amqp_get_rpc_reply(conn), "queue.delete");
        if (argc >= 5) {
            amqp_exchange_delete(conn, 1, amqp_cstring_bytes(argv[4]), 0);
            die_reply(amqp_get_rpc_reply(conn), "exchange.delete");
        }
    } else if (strcmp(cmd, "dump") == 0 && argc >= 6) {
        rc = rdump(conn, queue, atol(argv[4]), atoi(argv[5]));
    } else if (strcmp(cmd, "read") == 0 && argc >= 6) {
        const char *hkey = NULL, *hprefix = NULL, *ctype = NULL, *id_header = NULL;
        FILE *ids = NULL;
        long pace_us = 0;
        for (int i = 6; i < argc; i++) {
            if (strcmp(argv[i], "--header-n") == 0 && i + 2 < argc) {
                hkey = argv[++i];
                hprefix = argv[++i];
            } else if (strcmp(argv[i], "--content-type") == 0 && i + 1 < argc) {
                ctype = argv[++i];
            } else if (strcmp(argv[i], "--id-header") == 0 && i + 1 < argc) {
                id_header = argv[++i];
            } else if (strcmp(argv[i], "--pace-us") == 0 && i + 1 < argc) {
                pace_us = atol(argv[++i]);
            } else if (strcmp(argv[i], "--ids") == 0 && i + 1 < argc) {
                if (!(ids = fopen(argv[++i], "w"))) {
                    perror(argv[i]);
                    return 2;
                }
            } else {
                fprintf(stderr, "rconsume: unknown argument %s\n", argv[i]);
                return 2;
            }
        }
        rc = do_read(conn, queue, atol(argv[4]), atoi(argv[5]), hkey, hprefix, ctype, ids,
                     id_header, pace_us);
        if (ids && fclose(ids) != 0)
            rc = 2;
    } else {
        fprintf(stderr, "rconsume: unknown command %s\n", cmd);
        return 2;
    }
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    return rc;
}
