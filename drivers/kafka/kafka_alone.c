/*
 * Sending alone. A broker judges a produce request's size per batch: when
 * it answers MSG_SIZE_TOO_LARGE, every message of the batch gets that
 * answer, the small ones too. Such a message (under message.max.bytes: the
 * larger ones never leave, kafka_check.c) is completed as the output's state
 * and remembered; offered again, it goes through a second producer made
 * with batch.num.messages=1, where the broker's answer is about that message
 * alone: too large there is PERMANENT, with its size.
 *
 * Order: while an aggregate has messages in flight on the alone producer,
 * its later messages go there too (one producer, one partition: in order).
 */
#include <stdio.h>
#include <string.h>

#include "kafka_int.h"

int kafka_suspect(const obx_instance *inst, uint64_t event)
{
    for (size_t i = 0; i < inst->suspect_count; i++)
        if (inst->suspects[i] == event)
            return 1;
    return 0;
}

void kafka_suspect_add(obx_instance *inst, uint64_t event)
{
    size_t n = sizeof inst->suspects / sizeof *inst->suspects;
    if (kafka_suspect(inst, event))
        return;
    /* the oldest is forgotten first: it is then sent in a batch once more */
    inst->suspects[inst->suspect_next] = event;
    inst->suspect_next = (inst->suspect_next + 1) % n;
    if (inst->suspect_count < n)
        inst->suspect_count++;
}

void kafka_suspect_remove(obx_instance *inst, uint64_t event)
{
    for (size_t i = 0; i < inst->suspect_count; i++)
        if (inst->suspects[i] == event)
            inst->suspects[i] = 0; /* a hash of 0 is never asked for in practice */
}

static struct kafka_alone_agg *kafka_alone_find(const obx_instance *inst, uint64_t aggregate)
{
    for (size_t i = 0; i < inst->alone_agg_count; i++)
        if (inst->alone_aggs[i].aggregate == aggregate)
            return (struct kafka_alone_agg *)&inst->alone_aggs[i];
    return NULL;
}

int kafka_alone_busy(const obx_instance *inst, uint64_t aggregate)
{
    return kafka_alone_find(inst, aggregate) != NULL;
}

int kafka_alone_take(obx_instance *inst, uint64_t aggregate)
{
    struct kafka_alone_agg *a = kafka_alone_find(inst, aggregate);
    if (!a) {
        if (inst->alone_agg_count == sizeof inst->alone_aggs / sizeof *inst->alone_aggs)
            return -1;
        a = &inst->alone_aggs[inst->alone_agg_count++];
        *a = (struct kafka_alone_agg){aggregate, 0};
    }
    a->in_flight++;
    return 0;
}

void kafka_alone_release(obx_instance *inst, uint64_t aggregate)
{
    struct kafka_alone_agg *a = kafka_alone_find(inst, aggregate);
    if (a && --a->in_flight == 0)
        *a = inst->alone_aggs[--inst->alone_agg_count];
}

rd_kafka_t *kafka_alone_rk(obx_instance *inst, char *why, size_t why_size)
{
    char err[256];
    if (inst->rk_alone)
        return inst->rk_alone;
    if (!inst->alone_conf) {
        snprintf(why, why_size, "cannot send alone: no configuration kept");
        return NULL;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_dup(inst->alone_conf);
    inst->rk_alone = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!inst->rk_alone) {
        rd_kafka_conf_destroy(conf); /* not taken over on failure */
        snprintf(why, why_size, "cannot create the producer that sends alone: %s", err);
        return NULL;
    }
    inst->host->log(inst->host->host_ctx, OBX_LOG_INFO,
                    "a broker refused a request as too large: its messages are sent one per "
                    "batch through a second producer");
    return inst->rk_alone;
}
