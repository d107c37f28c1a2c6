/* Kafka driver internals shared by its source files (not installed). */
#ifndef OBX_KAFKA_INT_H
#define OBX_KAFKA_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "obx/cloudevents.h"
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
    /* templates over the message's fields (NULL: not set), expanded per
     * message into the buffers below */
    const char *key_template, *partition_template;
    char key_buf[1024], partition_buf[32];
    obx_ce_config ce;         /* format = "cloudevents": how messages are shaped */
    int debezium;             /* compat = "debezium": an "id" header instead of the relay's set */
    int created_at_timestamp; /* timestamp = "created_at": the record's time is the row's */
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
        obx_status status; /* what the later ones complete with (kafka_held_status) */
    } failed[64];
    size_t failed_count, failed_next;
    /* Topic handles by name: producing by name alone leaves a new topic's
     * metadata to librdkafka's 1 s scan (measured: 1,000 ms to the first
     * delivery instead of 2 ms). */
    rd_kafka_topic_t **topics;
    size_t topic_count, topic_cap;
    /* librdkafka keeps every topic a producer ever used until the producer
     * is destroyed (measured: 8.9 KB each with 4 partitions); past
     * KAFKA_TOPICS_MAX the producer is replaced when nothing is in flight
     * (kafka_recycle). A copy of its configuration for that: */
    rd_kafka_conf_t *main_conf;
    size_t recycled;      /* producers replaced so far */
    int64_t max_msg_size; /* message.max.bytes: larger messages are refused before sending */
    /*
     * Sent alone (kafka_alone.c): a broker answers MSG_SIZE_TOO_LARGE for a
     * whole request, so every message in it gets the answer. Such a message
     * is not judged on that: it is offered again and then sent through a
     * second producer that puts one message in each batch, where the answer
     * is about it alone. The events to send alone are kept by event id hash;
     * an aggregate with messages in flight on that producer sends its later
     * ones there too, so they stay in order.
     */
    rd_kafka_conf_t *alone_conf; /* for the second producer, made on first need */
    rd_kafka_t *rk_alone;
    uint64_t suspects[1024];
    size_t suspect_count, suspect_next;
    struct kafka_alone_agg {
        uint64_t aggregate;
        size_t in_flight;
    } alone_aggs[64];
    size_t alone_agg_count;
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
#define KAFKA_TOPICS_MAX 1024 /* topic handles per producer; then recycled or by name */

/* Maps a librdkafka error to an obx_status for this instance's policy:
 * the pushback answers (timeouts, transport, a full queue, a leader away)
 * are UNAVAILABLE (kafka_unavailable), never a verdict on the message. */
obx_status kafka_classify(const obx_instance *inst, rd_kafka_resp_err_t err);

/* Local checks before sending. (kafka_check.c) */
/* 1 with the reason in why when NAME cannot be a Kafka topic. */
int kafka_topic_illegal(const char *name, char *why, size_t why_size);
/* librdkafka's fixed allowance per record (length, attributes, timestamp,
 * offset, key, value and header count fields at their widest). */
#define KAFKA_RECORD_MAX_OVERHEAD 36
/* A message's size as librdkafka compares it to message.max.bytes. */
size_t kafka_wire_size(size_t key_len, size_t value_len, const rd_kafka_headers_t *hdrs);
/* FNV-1a of a string, for event ids. */
uint64_t kafka_hash(const char *s);

/* Sending alone. (kafka_alone.c) */
int kafka_suspect(const obx_instance *inst, uint64_t event);
void kafka_suspect_add(obx_instance *inst, uint64_t event);
void kafka_suspect_remove(obx_instance *inst, uint64_t event);
/* Does AGGREGATE have messages in flight on the alone producer? */
int kafka_alone_busy(const obx_instance *inst, uint64_t aggregate);
/* Counts one more (take) or one less (release) in flight alone for
 * AGGREGATE; take returns -1 when the table is full. */
int kafka_alone_take(obx_instance *inst, uint64_t aggregate);
void kafka_alone_release(obx_instance *inst, uint64_t aggregate);
/* The alone producer, made on first use; NULL with the reason. */
rd_kafka_t *kafka_alone_rk(obx_instance *inst, char *why, size_t why_size);

#endif
