/*
 * RabbitMQ driver: a channel-level error costs the channel, not the connection.
 *
 * The broker closes the publishing channel for one publish it will not take
 * (ACCESS_REFUSED on one exchange, PRECONDITION_FAILED for a body over
 * max_message_size, NOT_FOUND for an exchange deleted since it was checked)
 * and drops what follows it on that channel. Which publish it was, the close
 * does not say, and publishes are pipelined. But a channel handles its
 * publishes in order and stops at the bad one: every publish the broker has
 * answered (acked, nacked, returned) came before it. So the suspects are the
 * unconfirmed publishes after the highest tag answered. One suspect is the
 * culprit: it completes PERMANENT with the broker's code and text. Several:
 * they are remembered and, offered again, each is sent alone (rmq_publish.c),
 * so that the next close names its culprit. Every other unconfirmed message
 * completes as the output's state (offered again, nothing counted), and the
 * channel is opened again on the same connection.
 */
#include <stdio.h>
#include <string.h>

#include "rmq_channel.h"
#include "rmq_confirm.h"
#include "rmq_conn.h"

uint64_t rmq_event_hash(const char *event_id)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)event_id; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h ? h : 1; /* 0 marks a removed suspect */
}

int rmq_suspect(const obx_instance *inst, uint64_t event)
{
    for (size_t i = 0; i < inst->suspect_count; i++)
        if (inst->suspects[i] == event)
            return 1;
    return 0;
}

static void rmq_suspect_add(obx_instance *inst, uint64_t event)
{
    if (rmq_suspect(inst, event))
        return;
    /* the oldest is forgotten first: it is then pipelined once more */
    inst->suspects[inst->suspect_next] = event;
    inst->suspect_next = (inst->suspect_next + 1) % RMQ_SUSPECTS_MAX;
    if (inst->suspect_count < RMQ_SUSPECTS_MAX)
        inst->suspect_count++;
}

void rmq_suspect_remove(obx_instance *inst, uint64_t event)
{
    for (size_t i = 0; i < inst->suspect_count; i++)
        if (inst->suspects[i] == event)
            inst->suspects[i] = 0;
}

/* AMQP's soft errors that a publish causes; any other code is not one event's. */
static int rmq_publish_error(uint16_t code)
{
    switch (code) {
    case AMQP_CONTENT_TOO_LARGE:
    case AMQP_NO_ROUTE:
    case AMQP_NO_CONSUMERS:
    case AMQP_ACCESS_REFUSED:
    case AMQP_NOT_FOUND:
    case AMQP_RESOURCE_LOCKED:
    case AMQP_PRECONDITION_FAILED: return 1;
    default: return 0;
    }
}

int rmq_channel_closed(obx_instance *inst, uint16_t code, const char *text)
{
    size_t suspects = 0;
    uint64_t culprit = 0;
    for (uint64_t t = inst->answered_tag + 1; t < inst->next_tag; t++) {
        rmq_entry *e = rmq_entry_at(inst, t);
        if (e && !e->done) {
            suspects++;
            culprit = culprit ? culprit : t;
        }
    }
    char why[400];
    if (rmq_publish_error(code) && suspects == 1) {
        obx_status status = code == AMQP_NOT_FOUND ? inst->unroutable : OBX_PERMANENT;
        snprintf(why, sizeof(why), "%s", text);
        rmq_suspect_remove(inst, rmq_event_hash(rmq_entry_at(inst, culprit)->event_id));
        rmq_fail(inst, culprit, status, code, why);
        snprintf(why, sizeof(why),
                 "the broker closed the channel for an earlier message (%s); sent again", text);
    } else if (rmq_publish_error(code) && suspects > 1) {
        for (uint64_t t = inst->answered_tag + 1; t < inst->next_tag; t++) {
            rmq_entry *e = rmq_entry_at(inst, t);
            if (e && !e->done)
                rmq_suspect_add(inst, rmq_event_hash(e->event_id));
        }
        snprintf(why, sizeof(why),
                 "the broker closed the channel for one of %zu messages (%s); each is sent alone "
                 "when offered again",
                 suspects, text);
    } else {
        snprintf(why, sizeof(why), "the broker closed the channel (%s); sent again", text);
    }
    inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "%s; opening it again", why);
    rmq_fail_pending(inst, rmq_unavailable(inst), why);
    return rmq_open_publishing(inst, inst->conn);
}
