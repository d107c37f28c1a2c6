/*
 * rconsume's `dump` command: prints each message of a queue as one JSON line,
 *   {"content_type": "...", "message_id": "...", "type": "...", "expiration": "...",
 *    "priority": N, "headers": {"name": "text", ...}, "body": "..."}
 * (a property not set: null; text headers only; the body as text) for a reader in another language,
 * such as the CloudEvents tests' SDK check. Stops after N messages or when
 * none came for IDLE_MS.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "rdump.h"

/* A JSON string of len bytes (control characters escaped; the rest as is). */
static void json_str(const void *data, size_t len)
{
    const unsigned char *p = data;
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '"' || p[i] == '\\')
            printf("\\%c", p[i]);
        else if (p[i] < 0x20)
            printf("\\u%04x", p[i]);
        else
            putchar(p[i]);
    }
    putchar('"');
}

/* ,"name":"text" for a property that is set, else ,"name":null */
static void rdump_prop(const char *name, int set, amqp_bytes_t value)
{
    printf(",\"%s\":", name);
    if (set)
        json_str(value.bytes, value.len);
    else
        printf("null");
}

int rdump(amqp_connection_state_t conn, const char *queue, long expected, int idle_ms)
{
    amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 1, 0,
                       amqp_empty_table);
    if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL)
        return fprintf(stderr, "rconsume dump: basic.consume failed\n"), 2;
    long got = 0;
    while (got < expected) {
        struct timeval tv = {idle_ms / 1000, (idle_ms % 1000) * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(conn);
        amqp_rpc_reply_t r = amqp_consume_message(conn, &env, &tv, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
            break;
        const amqp_basic_properties_t *p = &env.message.properties;
        printf("{\"content_type\":");
        if (p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
            json_str(p->content_type.bytes, p->content_type.len);
        else
            printf("null");
        rdump_prop("message_id", p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id);
        rdump_prop("type", p->_flags & AMQP_BASIC_TYPE_FLAG, p->type);
        rdump_prop("expiration", p->_flags & AMQP_BASIC_EXPIRATION_FLAG, p->expiration);
        if (p->_flags & AMQP_BASIC_PRIORITY_FLAG)
            printf(",\"priority\":%u", (unsigned)p->priority);
        else
            printf(",\"priority\":null");
        printf(",\"headers\":{");
        for (int i = 0, n = 0; (p->_flags & AMQP_BASIC_HEADERS_FLAG) && i < p->headers.num_entries;
             i++) {
            const amqp_table_entry_t *e = &p->headers.entries[i];
            if (e->value.kind != AMQP_FIELD_KIND_UTF8)
                continue;
            printf(n++ ? "," : "");
            json_str(e->key.bytes, e->key.len);
            putchar(':');
            json_str(e->value.value.bytes.bytes, e->value.value.bytes.len);
        }
        printf("},\"body\":");
        json_str(env.message.body.bytes, env.message.body.len);
        printf("}\n");
        amqp_destroy_envelope(&env);
        got++;
    }
    fprintf(stderr, "rconsume dump: %ld of %ld messages\n", got, expected);
    return got == expected ? 0 : 1;
}
