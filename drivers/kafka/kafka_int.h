/* Kafka driver internals shared by its source files (not installed). */
#ifndef OBX_KAFKA_INT_H
#define OBX_KAFKA_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "obx/driver.h"

/* What a message is keyed by, which decides its partition. */
typedef enum kafka_key_mode {
    KAFKA_KEY_AGGREGATE_ID = 0, /* one aggregate -> one partition -> its order kept */
    KAFKA_KEY_EVENT_ID,
    KAFKA_KEY_NONE
} kafka_key_mode;

struct obx_instance {
    const obx_host *host;
    rd_kafka_t *rk;
    kafka_key_mode key_mode;
    int unknown_topic_permanent;
    int authorization_permanent;
    /*
     * Accepted messages without a completion yet. Delivery reports run only
     * inside rd_kafka_poll/rd_kafka_flush, which this driver calls from the
     * host thread that drives the instance, so a plain counter suffices.
     */
    size_t in_flight;
    int closed; /* set by close: no completion may follow */
    /* Every broker down (librdkafka's ALL_BROKERS_DOWN) until a delivery or a
     * probe gets through. Read by the log callback on librdkafka's threads. */
    atomic_int down;
    char down_reason[160]; /* host thread only */
    /* In order: publishes numbered from 1; an aggregate whose message failed
     * fails its later ones published up to `upto` (kafka_produce.c). */
    uint64_t published;
    struct kafka_failed {
        uint64_t aggregate, upto;
    } failed[64];
    size_t failed_count, failed_next;
    /* Topic handles by name: producing by name alone leaves a new topic's
     * metadata to librdkafka's 1 s scan (measured: 1,000 ms to the first
     * delivery instead of 2 ms). */
    rd_kafka_topic_t **topics;
    size_t topic_count, topic_cap;
};

/* The driver's options and what the host enforces for them. (kafka_conf.c) */
extern const obx_option kafka_options[];
extern const obx_option_spec kafka_specs[];

/* Builds the producer configuration from options and properties.
 * Returns NULL with a one-line reason in errstr. (kafka_conf.c) */
rd_kafka_conf_t *kafka_conf_build(obx_instance *inst, char *errstr, size_t errstr_size);

/* Reachability: librdkafka's error and log callbacks, the down/back log
 * lines, and the probe. (kafka_health.c) */
void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);
void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);
void kafka_mark_back(obx_instance *inst, const char *how);
obx_status kafka_probe(obx_instance *inst, int timeout_ms);
/* UNAVAILABLE for a host that knows it (ABI 1.1, recognised by refuse), else RETRIABLE. */
obx_status kafka_unavailable(const obx_instance *inst);

/* publish_batch and the delivery report callback. (kafka_produce.c) */
obx_status kafka_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                               obx_status *accept);
void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque);

/* Releases the topic handles; before rd_kafka_destroy. (kafka_produce.c) */
void kafka_topics_free(obx_instance *inst);

/* Maps a librdkafka error to an obx_status for this instance's policy. */
obx_status kafka_classify(const obx_instance *inst, rd_kafka_resp_err_t err);

#endif
