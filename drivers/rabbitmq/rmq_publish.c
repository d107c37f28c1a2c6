/*
 * RabbitMQ driver: pipelined publishing and publisher confirms.
 *
 * After confirm.select the broker numbers publishes on the channel 1, 2, 3...
 * so the unconfirmed messages live in a ring indexed by delivery tag.
 * basic.ack / basic.nack (possibly `multiple`) complete ranges of it. A
 * basic.return (mandatory, unroutable) carries no delivery tag but comes
 * before the ack of its message: it is matched by message_id (the event id,
 * or a template's text holding it: rmq_props.c) and fails that message with
 * the broker's reply text (its ack then finds it done). A nack is pushback
 * (a full queue with reject-publish): the output's state, not the message's. A channel.close is
 * about one message: rmq_channel.c.
 *
 * In order: one channel routes its publishes in order, so an aggregate's
 * messages reach their queues in order. Acks may come in any order, though
 * (a nack for one message can follow the ack of a later one), and a later
 * message of an aggregate routes fine after an earlier one was returned. So
 * an ack completes a message only once the earlier ones of its aggregate are
 * done (until then it waits, marked acked); when a message fails, every later
 * one of its aggregate still in flight fails with it (RETRIABLE); and in a
 * batch every message after a refused one of its aggregate is refused: none
 * is acknowledged ahead of a failed one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "obx/driver_util.h"
#include "obx/envelope.h"
#include "rmq_channel.h"
#include "rmq_confirm.h"
#include "rmq_conn.h"
#include "rmq_limits.h"
#include "rmq_props.h"
#include "rmq_publish.h"

/* What a publish adds to its body, about (method, header frame, properties). */
#define RMQ_FRAME_OVERHEAD 512
#define RMQ_READ_EVERY_BYTES 65536

/* A basic.return: read its content to learn which message it was. */
static int rmq_on_return(obx_instance *inst, amqp_channel_t channel, const amqp_basic_return_t *ret)
{
    char text[sizeof(((rmq_entry *)0)->return_text)];
    snprintf(text, sizeof(text), "%.*s (exchange '%.*s', routing key '%.*s')",
             (int)ret->reply_text.len, (const char *)ret->reply_text.bytes, (int)ret->exchange.len,
             (const char *)ret->exchange.bytes, (int)ret->routing_key.len,
             (const char *)ret->routing_key.bytes);
    uint16_t code = ret->reply_code;
    amqp_message_t msg;
    amqp_rpc_reply_t r = amqp_read_message(inst->conn, channel, &msg, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        char why[256];
        rmq_reply_text(r, "reading a returned message", why, sizeof(why));
        rmq_disconnect(inst, why, 0);
        return -1;
    }
    int matched = 0;
    if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        amqp_bytes_t id = msg.properties.message_id;
        uint64_t hash = rmq_id_hash(id.bytes, id.len);
        for (uint64_t t = inst->base_tag; t < inst->next_tag && !matched; t++) {
            rmq_entry *e = rmq_entry_at(inst, t);
            /* a done one too: it may have failed already, behind its aggregate */
            if (!e->return_code && e->id_hash == hash &&
                rmq_id_holds(id.bytes, id.len, e->event_id)) {
                e->return_code = code ? code : 312;
                snprintf(e->return_text, sizeof(e->return_text), "%s", text);
                matched = 1;
                if (t > inst->answered_tag)
                    inst->answered_tag = t; /* the channel went past it */
                /* fail it now: later messages of its aggregate may be acked
                 * before its own ack comes */
                rmq_fail(inst, t, inst->unroutable, e->return_code, e->return_text);
            }
        }
    }
    amqp_destroy_message(&msg);
    if (!matched)
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "basic.return for no unconfirmed message: %s", text);
    return matched;
}

static void rmq_on_close(obx_instance *inst, const amqp_frame_t *f)
{
    char why[256];
    if (f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = f->payload.method.decoded;
        snprintf(why, sizeof(why), "broker closed the connection: %.*s", (int)m->reply_text.len,
                 (const char *)m->reply_text.bytes);
        amqp_connection_close_ok_t ok = {0};
        amqp_send_method(inst->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        rmq_disconnect(inst, why, 0);
        return;
    }
    const amqp_channel_close_t *m = f->payload.method.decoded;
    char text[256];
    snprintf(text, sizeof(text), "%.*s", (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    amqp_channel_close_ok_t ok = {0};
    int sent = amqp_send_method(inst->conn, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    if (sent < 0) {
        snprintf(why, sizeof(why), "connection lost: %s", amqp_error_string2(sent));
        rmq_disconnect(inst, why, 0);
    } else if (f->channel != RMQ_CHANNEL) {
        if (f->channel == inst->check_channel)
            inst->check_channel_open = 0;
    } else if (rmq_channel_closed(inst, m->reply_code, text) != 0) {
        rmq_disconnect(inst, inst->last_error, 1); /* could not open it again */
    }
}

/* A resource alarm: the broker reads no more publishes until it lifts it.
 * The unconfirmed ones wait in the broker's socket buffer, unread: they
 * complete as the output's state (offered again once it lifts: duplicates,
 * never lost, nothing counted), and new ones are refused until then. */
static int rmq_on_blocked(obx_instance *inst, const amqp_connection_blocked_t *b)
{
    size_t before = inst->pending;
    char why[160];
    inst->blocked = 1;
    snprintf(inst->blocked_reason, sizeof(inst->blocked_reason), "%.*s", (int)b->reason.len,
             (const char *)b->reason.bytes);
    inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "broker blocked publishing: %s",
                    inst->blocked_reason);
    snprintf(why, sizeof(why), "broker blocked publishing: %s", inst->blocked_reason);
    rmq_fail_pending(inst, rmq_unavailable(inst), why);
    return (int)before;
}

/* Handles one frame; returns completions made, or -1 when the connection is gone. */
static int rmq_on_frame(obx_instance *inst, const amqp_frame_t *f)
{
    if (f->frame_type != AMQP_FRAME_METHOD)
        return 0;
    switch (f->payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
        const amqp_basic_ack_t *a = f->payload.method.decoded;
        return rmq_confirm(inst, a->delivery_tag, a->multiple, 1);
    }
    case AMQP_BASIC_NACK_METHOD: {
        const amqp_basic_nack_t *n = f->payload.method.decoded;
        return rmq_confirm(inst, n->delivery_tag, n->multiple, 0);
    }
    case AMQP_BASIC_RETURN_METHOD:
        return rmq_on_return(inst, f->channel, f->payload.method.decoded);
    case AMQP_CHANNEL_CLOSE_METHOD:
    case AMQP_CONNECTION_CLOSE_METHOD: {
        size_t before = inst->pending;
        rmq_on_close(inst, f);
        return (int)(before - inst->pending);
    }
    case AMQP_CONNECTION_BLOCKED_METHOD: return rmq_on_blocked(inst, f->payload.method.decoded);
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
        inst->blocked = 0;
        inst->host->log(inst->host->host_ctx, OBX_LOG_INFO, "broker unblocked publishing");
        return 0;
    default: return 0;
    }
}

/* Why the connection is gone after rabbitmq-c returned rc (errno as it left it). */
static void rmq_lost_text(const obx_instance *inst, int rc, int err, const char *what, char *buf,
                          size_t size)
{
    if (rc == AMQP_STATUS_SOCKET_ERROR && err == ETIMEDOUT && inst->write_timeout_ms > 0)
        snprintf(buf, size,
                 "%sconnection lost: the broker took none of the data written to it for %d ms "
                 "(write_timeout_ms)",
                 what, inst->write_timeout_ms);
    else
        snprintf(buf, size, "%sconnection lost: %s", what, amqp_error_string2(rc));
}

int rmq_pump(obx_instance *inst, int timeout_ms)
{
    int done = 0;
    int64_t deadline = rmq_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (inst->conn) {
        /* Wait while nothing completed yet; afterwards only drain what is there. */
        int64_t left = done > 0 ? 0 : deadline - rmq_now_ms();
        if (left < 0)
            left = 0;
        struct timeval tv = {(time_t)(left / 1000), (suseconds_t)((left % 1000) * 1000)};
        amqp_frame_t f;
        errno = 0;
        int rc = amqp_simple_wait_frame_noblock(inst->conn, &f, &tv);
        int err = errno;
        if (rc == AMQP_STATUS_TIMEOUT)
            break;
        if (rc != AMQP_STATUS_OK) {
            char why[200];
            rmq_lost_text(inst, rc, err, "", why, sizeof(why));
            size_t before = inst->pending;
            rmq_disconnect(inst, why, 0);
            return done + (int)before;
        }
        int n = rmq_on_frame(inst, &f);
        if (n < 0)
            return -1;
        done += n;
    }
    if (inst->conn)
        amqp_maybe_release_buffers(inst->conn);
    return done;
}

static amqp_table_entry_t rmq_hdr(const char *key, const char *value)
{
    amqp_table_entry_t e;
    e.key = amqp_cstring_bytes(key);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_cstring_bytes(value ? value : "");
    return e;
}

/* The message's properties; its headers table points into env, inst->ce_event
 * and inst->hdr. With format = "cloudevents" the relay's fields are the
 * binding's cloudEvents_* application properties instead. */
static void rmq_properties(obx_instance *inst, const obx_message *m, obx_envelope *env,
                           amqp_basic_properties_t *p)
{
    size_t n = 0;
    const obx_ce_event *ce = &inst->ce_event;
    env->count = 0;
    if (inst->ce.mode == OBX_CE_OFF)
        obx_envelope_fill_host(env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    for (size_t i = 0; i < env->count; i++)
        inst->hdr[n++] = rmq_hdr(env->field[i].name, env->field[i].value);
    for (size_t i = 0; inst->ce.mode != OBX_CE_OFF && i < ce->count; i++)
        inst->hdr[n++] = rmq_hdr(ce->attr[i].name, ce->attr[i].value);
    for (size_t i = 0; i < m->header_count; i++)
        inst->hdr[n++] = rmq_hdr(m->headers[i].key, m->headers[i].value);

    memset(p, 0, sizeof(*p));
    p->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG |
                AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_HEADERS_FLAG;
    p->delivery_mode = inst->persistent ? 2 : 1;
    const rmq_props *props = &inst->props;
    p->message_id = amqp_cstring_bytes(props->text[RMQ_P_MESSAGE_ID]);
    p->type = amqp_cstring_bytes(props->text[RMQ_P_TYPE]);
    if (props->tpl[RMQ_P_PRIORITY]) {
        p->_flags |= AMQP_BASIC_PRIORITY_FLAG;
        p->priority = props->priority;
    }
    if (props->tpl[RMQ_P_EXPIRATION]) {
        p->_flags |= AMQP_BASIC_EXPIRATION_FLAG;
        p->expiration = amqp_cstring_bytes(props->text[RMQ_P_EXPIRATION]);
    }
    p->timestamp = (uint64_t)(m->created_at_us > 0 ? m->created_at_us / 1000000 : 0);
    p->headers.num_entries = (int)n;
    p->headers.entries = inst->hdr;
    const char *ct = inst->ce.mode != OBX_CE_OFF      ? ce->content_type
                     : props->tpl[RMQ_P_CONTENT_TYPE] ? props->text[RMQ_P_CONTENT_TYPE]
                     : m->content_type                ? m->content_type
                                                      : inst->content_type_default;
    if (ct) {
        p->_flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
        p->content_type = amqp_cstring_bytes(ct);
    }
}

static int rmq_reserve_headers(obx_instance *inst, size_t count)
{
    if (count <= inst->hdr_cap)
        return 0;
    amqp_table_entry_t *h = realloc(inst->hdr, count * sizeof(*h));
    if (!h)
        return -1;
    inst->hdr = h;
    inst->hdr_cap = count;
    return 0;
}

/* Waits (bounded by connect_timeout_ms) until nothing is unconfirmed, so
 * that what follows is judged alone. 0, or -1 with why. */
static int rmq_settle(obx_instance *inst, const char *purpose, char *why, size_t why_size)
{
    int64_t deadline = rmq_now_ms() + inst->connect_timeout_ms;
    while (inst->conn && inst->pending > 0) {
        int64_t left = deadline - rmq_now_ms();
        if (left <= 0)
            break;
        rmq_pump(inst, (int)left);
    }
    if (!inst->conn)
        snprintf(why, why_size, "not connected: %s", inst->last_error);
    else if (inst->pending > 0)
        snprintf(why, why_size, "%zu messages not confirmed within %d ms; %s waits for them",
                 inst->pending, inst->connect_timeout_ms, purpose);
    return inst->conn && inst->pending == 0 ? 0 : -1;
}

/* With one channel (the broker's channel_max is 1) a failed exchange check
 * closes the publishing channel, so a check waits until nothing is
 * unconfirmed; then the channel can be opened again at once, losing nothing. */
static int rmq_settle_for_check(obx_instance *inst, const char *exchange, size_t len, char *why,
                                size_t why_size)
{
    if (inst->check_channel != RMQ_CHANNEL || inst->pending == 0 ||
        !rmq_exchange_unchecked(inst, exchange, len))
        return 0;
    return rmq_settle(inst, "an exchange check on the only channel (the broker's channel_max is 1)",
                      why, why_size);
}

/* Sends one message. OBX_OK: it gets exactly one completion, now or later;
 * else it is refused with that status and the reason in why (*down set when
 * the broker cannot be reached). */
static obx_status rmq_publish_one(obx_instance *inst, const obx_message *m, char *why,
                                  size_t why_size, int *code, int *down)
{
    const char *dest = m->destination ? m->destination : "";
    const char *slash = strchr(dest, '/');
    amqp_bytes_t exchange = {slash ? (size_t)(slash - dest) : 0, (void *)dest};
    amqp_bytes_t routing_key = amqp_cstring_bytes(slash ? slash + 1 : dest);
    *code = 0;
    if (!rmq_names_fit(inst, m, exchange, routing_key, why, why_size))
        return OBX_PERMANENT;
    if (!inst->conn && rmq_ensure_connected(inst) != 0) {
        snprintf(why, why_size, "not connected: %s", inst->last_error);
        *down = 1;
        return rmq_unavailable(inst);
    }
    if (inst->blocked) {
        snprintf(why, why_size, "broker blocked publishing: %s", inst->blocked_reason);
        *down = 1;
        return rmq_unavailable(inst);
    }
    obx_envelope env; /* the headers table points into it until the publish is written */
    amqp_basic_properties_t p;
    obx_ce_event *ce = &inst->ce_event; /* likewise; its last body freed before it is refilled */
    obx_ce_event_free(ce);
    ce->body = m->payload;
    ce->body_len = m->payload_len;
    if (inst->ce.mode != OBX_CE_OFF) {
        int rc = obx_ce_fill(ce, &inst->ce, inst->host, m, OBX_CE_AMQP, why, why_size);
        if (rc != 0)
            return rc == -1 ? OBX_PERMANENT : OBX_RETRIABLE;
    }
    if (rmq_props_expand(inst, m, why, why_size) != 0)
        return OBX_PERMANENT;
    rmq_properties(inst, m, &env, &p);
    if (!rmq_properties_fit(inst, &p, why, why_size))
        return OBX_PERMANENT;
    if (rmq_settle_for_check(inst, dest, exchange.len, why, why_size) != 0) {
        *down = 1;
        return rmq_unavailable(inst);
    }
    int exists = rmq_exchange_exists(inst, dest, exchange.len, why, why_size);
    if (exists < 0) {
        snprintf(why, why_size, "not connected: %s", inst->last_error);
        *down = 1;
        return rmq_unavailable(inst);
    }
    if (exists == 0) {
        *code = 404;
        return inst->unroutable;
    }
    /* one the broker may have closed the channel for: alone, so that a close names it */
    uint64_t event = inst->suspect_count ? rmq_event_hash(m->event_id) : 0;
    int alone = event && rmq_suspect(inst, event);
    if (alone && rmq_settle(inst, "sending alone a message the channel may have closed for", why,
                            why_size) != 0) {
        *down = 1;
        return rmq_unavailable(inst);
    }

    uint64_t tag = inst->next_tag++;
    rmq_entry *e = rmq_entry_at(inst, tag);
    e->token = m->token;
    e->aggregate = obx_aggregate_hash(m);
    e->done = 0;
    e->acked = 0;
    e->return_code = 0;
    e->return_text[0] = '\0';
    snprintf(e->event_id, sizeof(e->event_id), "%s", m->event_id ? m->event_id : "");
    e->id_hash = rmq_id_hash(p.message_id.bytes, p.message_id.len);
    inst->pending++;
    amqp_bytes_t body = {ce->body_len, (void *)ce->body};
    errno = 0;
    int rc = amqp_basic_publish(inst->conn, RMQ_CHANNEL, exchange, routing_key, inst->mandatory, 0,
                                &p, body);
    int err = errno;
    if (rc < 0) {
        char lost[200];
        rmq_lost_text(inst, rc, err, "publish failed, ", lost, sizeof(lost));
        /* the frame check missed (never expected): the method is out without
         * its header, so the connection goes, but the message is at fault */
        if (rc == AMQP_STATUS_TABLE_TOO_BIG)
            rmq_fail(inst, tag, OBX_PERMANENT, 0, "headers too large for one frame");
        rmq_disconnect(inst, lost, 0); /* completes this one too */
    } else if (alone) {
        char ignored[200];
        (void)rmq_settle(inst, "a message sent alone", ignored, sizeof(ignored));
        rmq_suspect_remove(inst, event); /* confirmed, judged, or in flight like any other */
    }
    return OBX_OK;
}

/* A refusal with its reason; a host without refuse (ABI 1.0) learns the
 * reason only from a completion, so there the message is accepted and
 * completed at once. */
static void rmq_refuse(obx_instance *inst, const obx_message *m, obx_status *accept,
                       obx_status status, int code, const char *why)
{
    const obx_host *host = inst->host;
    if (OBX_HOST_HAS(host, refuse)) {
        *accept = status;
        host->refuse(host->host_ctx, m->token, code, why);
    } else {
        *accept = OBX_OK;
        host->complete(host->host_ctx, m->token, status, code, why);
    }
}

obx_status rmq_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                             obx_status *accept)
{
    /* A host busy elsewhere may not have polled for a while: the broker may
     * have dropped us for missed heartbeats. Reading first notices a closed
     * socket, so the batch goes out on a fresh connection instead of failing. */
    obx_held_clear(&inst->held);
    obx_held_clear(&inst->held_out);
    if (inst->conn && count > 0)
        rmq_pump(inst, 0);
    obx_status down = OBX_OK; /* once the broker is unreachable, the rest waits too */
    size_t unread = 0;        /* bytes written since the broker's answers were last read */
    char why[400];
    for (size_t i = 0; i < count; i++) {
        const obx_message *m = &msgs[i];
        uint64_t aggregate = obx_aggregate_hash(m);
        int code = 0, unreachable = 0;
        obx_status status;
        if (down != OBX_OK) {
            status = down;
        } else if (obx_held_has(&inst->held, aggregate)) {
            status = OBX_RETRIABLE;
            snprintf(why, sizeof(why), RMQ_HELD_DETAIL);
        } else if (obx_held_has(&inst->held_out, aggregate)) {
            status = rmq_unavailable(inst); /* behind one to be offered again: not its fault */
            snprintf(why, sizeof(why), RMQ_HELD_DETAIL);
        } else if (rmq_reserve(inst) != 0 ||
                   rmq_reserve_headers(inst, OBX_ENVELOPE_MAX + OBX_CE_A_COUNT + m->header_count) !=
                       0) {
            status = OBX_RETRIABLE;
            snprintf(why, sizeof(why), "out of memory");
        } else {
            status = rmq_publish_one(inst, m, why, sizeof(why), &code, &unreachable);
        }
        if (status == OBX_OK) {
            accept[i] = OBX_OK;
            /* read what the broker says meanwhile: connection.blocked stops the
             * batch before it fills the socket, a channel.close before the rest
             * of the batch is written to a closed channel */
            unread += m->payload_len + RMQ_FRAME_OVERHEAD;
            if (unread >= RMQ_READ_EVERY_BYTES && inst->conn) {
                rmq_pump(inst, 0);
                unread = 0;
            }
            continue;
        }
        if (unreachable)
            down = status;
        rmq_refuse(inst, m, &accept[i], status, code, why);
        /* out of memory: the rest may go out */
        (void)obx_held_add(status == rmq_unavailable(inst) ? &inst->held_out : &inst->held,
                           aggregate);
    }
    if (inst->conn && inst->pending > 0)
        rmq_pump(inst, 0); /* confirms that are already here; keeps the socket drained */
    return OBX_OK;
}
