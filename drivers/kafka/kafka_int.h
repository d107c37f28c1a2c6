/* Kafka driver internals shared by its source files (not installed). */
#ifndef OBX_KAFKA_INT_H
#define OBX_KAFKA_INT_H

#include <stddef.h>

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
    /* Topic handles by name: producing by name alone leaves a new topic's
     * metadata to librdkafka's 1 s scan (measured: 1,000 ms to the first
     * delivery instead of 2 ms). */
    rd_kafka_topic_t **topics;
    size_t topic_count, topic_cap;
};

/* Builds the producer configuration from options and properties.
 * Returns NULL with a one-line reason in errstr. (kafka_conf.c) */
rd_kafka_conf_t *kafka_conf_build(obx_instance *inst, char *errstr, size_t errstr_size);

/* publish_batch and the delivery report callback. (kafka_produce.c) */
obx_status kafka_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                               obx_status *accept);
void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque);

/* Releases the topic handles; before rd_kafka_destroy. (kafka_produce.c) */
void kafka_topics_free(obx_instance *inst);

/* Maps a librdkafka error to an obx_status for this instance's policy. */
obx_status kafka_classify(const obx_instance *inst, rd_kafka_resp_err_t err);

#endif
