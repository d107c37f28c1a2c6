/*
 * Kafka driver (librdkafka): one idempotent producer (acks=all, ordered
 * retries) per instance. A message is OK only when its delivery report says
 * PERSISTED. Completions are made from rd_kafka_poll/rd_kafka_flush, which
 * this driver calls only from the host thread driving the instance (poll,
 * flush, publish_batch, probe, close), so none can happen after close.
 *
 * In order: the key (the aggregate id by default) puts an aggregate on one
 * partition, the idempotent producer keeps a partition's order through
 * retries, and a failed message fails the later in-flight ones of its
 * aggregate (kafka_produce.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kafka_int.h"

#define KAFKA_CLOSE_DRAIN_MS 10000 /* purged reports come back at once; this is a safety net */

static obx_instance *kafka_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    obx_instance *inst = calloc(1, sizeof *inst);
    rd_kafka_conf_t *conf;
    char why[512];

    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    conf = kafka_conf_build(inst, errstr, errstr_size);
    if (!conf) {
        free(inst);
        return NULL;
    }
    char value[32];
    size_t value_size = sizeof value;
    if (rd_kafka_conf_get(conf, "message.max.bytes", value, &value_size) == RD_KAFKA_CONF_OK)
        inst->max_msg_size = atoll(value);
    inst->main_conf = rd_kafka_conf_dup(conf);
    /* the producer that sends one message per batch (kafka_alone.c) */
    inst->alone_conf = rd_kafka_conf_dup(conf);
    if (rd_kafka_conf_set(inst->alone_conf, "batch.num.messages", "1", why, sizeof why) !=
        RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(inst->alone_conf);
        inst->alone_conf = NULL;
    }
    /* connects lazily: an unreachable cluster shows up as delivery timeouts */
    inst->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!inst->rk) {
        rd_kafka_conf_destroy(conf); /* not taken over on failure */
        if (inst->alone_conf)
            rd_kafka_conf_destroy(inst->alone_conf);
        rd_kafka_conf_destroy(inst->main_conf);
        snprintf(errstr, errstr_size, "cannot create producer: %s", why);
        free(inst);
        return NULL;
    }
    return inst;
}

static int64_t kafka_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define KAFKA_SLICE_MS 10 /* with two producers, each is served this often */

/* Serves both producers' reports for up to timeout_ms; with one producer,
 * one wait. Returns early once something completed. */
static void kafka_serve(obx_instance *inst, int timeout_ms, int flush)
{
    if (!inst->rk_alone) {
        if (flush)
            rd_kafka_flush(inst->rk, timeout_ms); /* serves delivery reports while it waits */
        rd_kafka_poll(inst->rk, flush ? 0 : timeout_ms);
        return;
    }
    int64_t deadline = kafka_now_ms() + timeout_ms;
    size_t before = inst->in_flight;
    for (;;) {
        int64_t left = deadline - kafka_now_ms();
        int slice = left < KAFKA_SLICE_MS ? (left > 0 ? (int)left : 0) : KAFKA_SLICE_MS;
        rd_kafka_poll(inst->rk_alone, 0);
        rd_kafka_poll(inst->rk, slice);
        if (inst->in_flight == 0 || left <= 0 || (!flush && inst->in_flight != before))
            return;
    }
}

static void kafka_poll(obx_instance *inst, int timeout_ms)
{
    if (!inst->closed)
        kafka_serve(inst, timeout_ms, 0);
}

static size_t kafka_flush(obx_instance *inst, int timeout_ms)
{
    if (inst->closed)
        return 0;
    kafka_serve(inst, timeout_ms, 1);
    return inst->in_flight;
}

static void kafka_close(obx_instance *inst)
{
    int64_t deadline;
    if (inst->closed)
        return;
    rd_kafka_poll(inst->rk, 0); /* acknowledgements already in stay OK */
    rd_kafka_purge(inst->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    if (inst->rk_alone) {
        rd_kafka_poll(inst->rk_alone, 0);
        rd_kafka_purge(inst->rk_alone, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    }
    /* every purged message gets a report (PURGE_QUEUE/PURGE_INFLIGHT): completed retriable */
    deadline = kafka_now_ms() + KAFKA_CLOSE_DRAIN_MS;
    while (inst->in_flight > 0 && kafka_now_ms() < deadline)
        kafka_serve(inst, 100, 0);
    if (inst->in_flight > 0)
        inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR,
                        "%zu messages got no delivery report before close", inst->in_flight);
    inst->closed = 1;
    /* no rd_kafka_poll runs from here on, so no delivery report callback either */
    kafka_topics_free(inst);
    rd_kafka_destroy(inst->rk);
    inst->rk = NULL;
    if (inst->rk_alone)
        rd_kafka_destroy(inst->rk_alone);
    inst->rk_alone = NULL;
    if (inst->alone_conf)
        rd_kafka_conf_destroy(inst->alone_conf);
    inst->alone_conf = NULL;
    if (inst->main_conf)
        rd_kafka_conf_destroy(inst->main_conf);
    inst->main_conf = NULL;
}

static void kafka_destroy(obx_instance *inst)
{
    if (!inst)
        return;
    kafka_close(inst);
    free(inst);
}

static const obx_driver_def kafka_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "kafka",
    .version = "0.2.0",
    .description = "Apache Kafka via librdkafka: idempotent producer, acks=all, delivery reports",
    .options = kafka_options,
    .create = kafka_create,
    .publish_batch = kafka_publish_batch,
    .poll = kafka_poll,
    .flush = kafka_flush,
    .close = kafka_close,
    .destroy = kafka_destroy,
    .flags = OBX_DRIVER_IN_ORDER | OBX_DRIVER_NULL_PAYLOAD,
    .option_specs = kafka_specs,
    .probe = kafka_probe,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &kafka_def;
}
