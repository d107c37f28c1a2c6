/*
 * Producing and completing: publish_batch hands messages to librdkafka with
 * a small record (token, publish number, aggregate) as the message opaque;
 * the delivery report is the only place an accepted message completes. A
 * message librdkafka rejects outright is refused with its text (for a host
 * without refuse, ABI 1.0, it is accepted and completed at once instead).
 *
 * In order: delivery reports of a partition come in publish order. When one
 * fails, the aggregate is remembered with the number of the last message
 * published so far; a later report of that aggregate up to that number is
 * turned into a failure, so no later message of an aggregate is
 * acknowledged ahead of a failed one; they complete UNAVAILABLE when the
 * failure was the output's state, RETRIABLE otherwise. While every broker
 * is down the batch is refused UNAVAILABLE.
 *
 * Whose fault: pushback (timeouts, transport, a full queue, a leader away:
 * kafka_classify) is the output's state, UNAVAILABLE; what one message
 * cannot be (an illegal topic name, over message.max.bytes) is refused
 * before sending, PERMANENT with the reason; a broker's verdict on a whole
 * batch (too large, invalid record) is not charged to each message in it
 * (kafka_alone.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_int.h"
#include "obx/driver_util.h"
#include "obx/envelope.h"

/* What travels with a message as its opaque, freed by its delivery report. */
typedef struct kafka_msg {
    uint64_t token;
    uint64_t number;    /* 1, 2, 3... per instance, in publish order */
    uint64_t aggregate; /* hash of aggregate type and id */
    uint64_t event;     /* hash of the event id */
    size_t size;        /* as compared with message.max.bytes */
    int alone;          /* sent through the alone producer */
} kafka_msg;

#define KAFKA_HELD_DETAIL "not sent in order: an earlier event of its aggregate failed"
#define KAFKA_PUBLISH_CHECK_MS 200 /* while down: does a broker answer again? */

/* Remember that km's aggregate failed: its messages published so far must not succeed. */
static void kafka_remember_failure(obx_instance *inst, const kafka_msg *km, obx_status status)
{
    size_t n = sizeof inst->failed / sizeof *inst->failed;
    inst->failed[inst->failed_next] = (struct kafka_failed){km->aggregate, inst->published, status};
    inst->failed_next = (inst->failed_next + 1) % n;
    if (inst->failed_count < n)
        inst->failed_count++;
}

/* What a message held back by a failure of STATUS completes with: the
 * output's state stays the output's state, anything else is retried. */
static obx_status kafka_held_status(obx_status status)
{
    return status == OBX_UNAVAILABLE ? OBX_UNAVAILABLE : OBX_RETRIABLE;
}

/* Was an earlier message of km's aggregate failed while km was in flight?
 * OBX_OK when not, else what km completes with. */
static obx_status kafka_after_failure(const obx_instance *inst, const kafka_msg *km)
{
    for (size_t i = 0; i < inst->failed_count; i++)
        if (inst->failed[i].aggregate == km->aggregate && km->number <= inst->failed[i].upto)
            return kafka_held_status(inst->failed[i].status);
    return OBX_OK;
}

obx_status kafka_classify(const obx_instance *inst, rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR: return OBX_OK;
    /* pushback: the cluster is slow, away or full; no message is at fault */
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
    case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
    case RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED: return kafka_unavailable(inst);
    /* the message itself can never be accepted */
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG: return OBX_PERMANENT;
    /* a topic may be created, an ACL granted, later: the operator decides */
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        return inst->unknown_topic_permanent ? OBX_PERMANENT : OBX_RETRIABLE;
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return inst->authorization_permanent ? OBX_PERMANENT : OBX_RETRIABLE;
    case RD_KAFKA_RESP_ERR__FATAL: return OBX_FATAL;
    default: return OBX_RETRIABLE;
    }
}

/* Completes one message, exactly once, never after close. */
static void kafka_complete(obx_instance *inst, uint64_t token, obx_status status, int code,
                           const char *detail)
{
    if (inst->closed)
        return;
    inst->in_flight--;
    if (inst->in_flight == 0)
        inst->failed_count = inst->failed_next = 0; /* nothing left that could overtake */
    inst->host->complete(inst->host->host_ctx, token, status, code, detail);
}

/* A broker answer that judges the batch (the request) a message was in,
 * not necessarily the message. */
static int kafka_batch_verdict(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_INVALID_RECORD;
}

/* The status and detail of a failed delivery report. */
static obx_status kafka_failure(obx_instance *inst, rd_kafka_t *rk, const kafka_msg *km,
                                rd_kafka_resp_err_t err, char *detail, size_t size)
{
    obx_status status = kafka_classify(inst, err);
    if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        snprintf(detail, size, "aborted: %s", rd_kafka_err2str(err));
    } else if (status == OBX_FATAL) {
        char why[256];
        rd_kafka_fatal_error(rk, why, sizeof why);
        snprintf(detail, size, "%s: %s", rd_kafka_err2str(err), why);
    } else if (kafka_batch_verdict(err) && !km->alone) {
        /* said of the whole batch: this message is judged again on its own */
        kafka_suspect_add(inst, km->event);
        status = kafka_unavailable(inst);
        snprintf(detail, size,
                 "%s for the batch that carried it (this message %zu bytes, message.max.bytes "
                 "%lld): offered again, it is sent alone",
                 rd_kafka_err2str(err), km->size, (long long)inst->max_msg_size);
    } else if (kafka_batch_verdict(err)) {
        status = OBX_PERMANENT;
        snprintf(detail, size,
                 "%s: refused alone at %zu bytes (under message.max.bytes %lld: the topic's "
                 "max.message.bytes is lower)",
                 rd_kafka_err2str(err), km->size, (long long)inst->max_msg_size);
    } else if (status == OBX_UNAVAILABLE && atomic_load(&inst->down)) {
        snprintf(detail, size, "%s (all brokers down: %s)", rd_kafka_err2str(err),
                 inst->down_reason);
    } else if (status == OBX_UNAVAILABLE) {
        snprintf(detail, size, "%s (the cluster did not take it in time: pushback)",
                 rd_kafka_err2str(err));
    } else {
        snprintf(detail, size, "%s", rd_kafka_err2str(err));
    }
    return status;
}

void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque)
{
    obx_instance *inst = opaque;
    kafka_msg km = *(kafka_msg *)rkmessage->_private;
    rd_kafka_resp_err_t err = rkmessage->err;
    obx_status status, held;
    char detail[512];

    free(rkmessage->_private);
    if (km.alone)
        kafka_alone_release(inst, km.aggregate);
    if (!err) {
        /* acks=all makes this PERSISTED; anything less is not an acknowledgement */
        if (km.alone)
            kafka_suspect_remove(inst, km.event);
        if (rd_kafka_message_status(rkmessage) != RD_KAFKA_MSG_STATUS_PERSISTED) {
            kafka_complete(inst, km.token, OBX_RETRIABLE, 0, "delivery not persisted");
        } else if ((held = kafka_after_failure(inst, &km)) != OBX_OK) {
            kafka_complete(inst, km.token, held, 0, KAFKA_HELD_DETAIL);
        } else {
            kafka_mark_back(inst, "a delivery was acknowledged");
            kafka_complete(inst, km.token, OBX_OK, 0, NULL);
        }
        return;
    }
    status = kafka_failure(inst, rk, &km, err, detail, sizeof detail);
    if (status == OBX_PERMANENT && km.alone)
        kafka_suspect_remove(inst, km.event);
    if (kafka_after_failure(inst, &km) == OBX_OK) /* else already covered by an earlier failure */
        kafka_remember_failure(inst, &km, status);
    kafka_complete(inst, km.token, status, (int)err, detail);
}

static void kafka_add_header(rd_kafka_headers_t *hdrs, const char *key, const char *value)
{
    rd_kafka_header_add(hdrs, key, -1, value, value ? -1 : 0);
}

/* The relay's headers, or (format = "cloudevents") the binding's ce_*
 * headers and its "content-type"; then the row's own headers. */
static rd_kafka_headers_t *kafka_headers(const obx_instance *inst, const obx_message *m,
                                         const obx_ce_event *ce)
{
    obx_envelope env = {0};
    if (inst->ce.mode == OBX_CE_OFF && !inst->debezium)
        obx_envelope_fill_host(&env, inst->host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(env.count + ce->count + 1 + m->header_count);
    if (inst->debezium) /* EventRouter's default: the event's id, as "id" */
        kafka_add_header(hdrs, "id", m->event_id);
    for (size_t i = 0; i < env.count; i++) /* rd_kafka_header_add copies */
        kafka_add_header(hdrs, env.field[i].name, env.field[i].value);
    for (size_t i = 0; i < ce->count; i++)
        kafka_add_header(hdrs, ce->attr[i].name, ce->attr[i].value);
    if (inst->ce.mode != OBX_CE_OFF)
        kafka_add_header(hdrs, "content-type", ce->content_type);
    else if (m->content_type && !inst->debezium)
        kafka_add_header(hdrs, "content_type", m->content_type);
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key)
            kafka_add_header(hdrs, m->headers[i].key, m->headers[i].value);
    return hdrs;
}

/* m's key: key_template expanded, or the field `key` names. -1 with why when
 * the template's key does not fit. */
static int kafka_key(obx_instance *inst, const obx_message *m, const char **key, char *why,
                     size_t why_size)
{
    if (inst->key_template) {
        *key = inst->key_buf;
        if (obx_ce_expand(inst->key_template, m, inst->key_buf, sizeof inst->key_buf) >= 0)
            return 0;
        snprintf(why, why_size, "key_template gives a key over %zu bytes",
                 sizeof inst->key_buf - 1);
        return -1;
    }
    switch (inst->key_mode) {
    case KAFKA_KEY_AGGREGATE_ID: *key = m->aggregate_id; break;
    case KAFKA_KEY_EVENT_ID: *key = m->event_id; break;
    default: *key = NULL;
    }
    return 0;
}

/* m's partition: partition_template expanded to a number, or
 * RD_KAFKA_PARTITION_UA (the partitioner's choice, by key). -2 with why
 * when the template gives no partition number. */
static int32_t kafka_partition(obx_instance *inst, const obx_message *m, char *why, size_t why_size)
{
    if (!inst->partition_template)
        return RD_KAFKA_PARTITION_UA;
    char *end = NULL;
    long n = -1;
    if (obx_ce_expand(inst->partition_template, m, inst->partition_buf,
                      sizeof inst->partition_buf) > 0)
        n = strtol(inst->partition_buf, &end, 10);
    if (n >= 0 && n <= INT32_MAX && end && *end == '\0')
        return (int32_t)n;
    snprintf(why, why_size, "partition_template gives \"%.32s\", not a partition number",
             inst->partition_buf);
    return -2;
}

/* The handle for topic `name`, created on first use; NULL past the cap. */
static rd_kafka_topic_t *kafka_topic(obx_instance *inst, const char *name)
{
    for (size_t i = 0; i < inst->topic_count; i++)
        if (strcmp(rd_kafka_topic_name(inst->topics[i]), name) == 0)
            return inst->topics[i];
    if (inst->topic_count == inst->topic_cap) {
        size_t cap = inst->topic_cap ? inst->topic_cap * 2 : 8;
        rd_kafka_topic_t **grown;
        if (cap > KAFKA_TOPICS_MAX || !(grown = realloc(inst->topics, cap * sizeof *grown)))
            return NULL;
        inst->topics = grown;
        inst->topic_cap = cap;
    }
    rd_kafka_topic_t *t = rd_kafka_topic_new(inst->rk, name, NULL);
    if (t)
        inst->topics[inst->topic_count++] = t;
    return t;
}

void kafka_topics_free(obx_instance *inst)
{
    for (size_t i = 0; i < inst->topic_count; i++)
        rd_kafka_topic_destroy(inst->topics[i]);
    free(inst->topics);
    inst->topics = NULL;
    inst->topic_count = inst->topic_cap = 0;
}

/* Replaces the producer by a new one when it has used KAFKA_TOPICS_MAX
 * topics and nothing is in flight, which frees librdkafka's per-topic
 * memory. */
static void kafka_recycle(obx_instance *inst)
{
    char why[256];
    if (inst->in_flight > 0 || inst->closed || !inst->main_conf)
        return; /* an in-flight report belongs to this producer: try again later */
    rd_kafka_conf_t *conf = rd_kafka_conf_dup(inst->main_conf);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "cannot replace the producer of %zu topics: %s", inst->topic_count, why);
        return;
    }
    kafka_topics_free(inst);
    rd_kafka_destroy(inst->rk);
    inst->rk = rk;
    if (inst->rk_alone && inst->alone_agg_count == 0) {
        rd_kafka_destroy(inst->rk_alone); /* made again when needed */
        inst->rk_alone = NULL;
    }
    inst->recycled++;
    inst->host->log(inst->host->host_ctx, OBX_LOG_DEBUG,
                    "producer replaced after %d topics (%zu so far): frees librdkafka's "
                    "per-topic memory",
                    KAFKA_TOPICS_MAX, inst->recycled);
}

static rd_kafka_resp_err_t kafka_produce_value(obx_instance *inst, const obx_message *m,
                                               const obx_ce_event *ce, rd_kafka_headers_t *hdrs,
                                               const char *key, size_t key_len, int32_t partition,
                                               char *why, size_t why_size);

/*
 * Hands one message to librdkafka: through the alone producer when it is a
 * suspect or its aggregate has messages in flight there. A local refusal
 * (illegal topic, too large, unknown topic) writes its reason to why.
 */
static rd_kafka_resp_err_t kafka_produce_one(obx_instance *inst, const obx_message *m, char *why,
                                             size_t why_size)
{
    const char *key = NULL;
    *why = '\0';
    if (kafka_key(inst, m, &key, why, why_size) < 0)
        return RD_KAFKA_RESP_ERR__INVALID_ARG;
    size_t key_len = key ? strlen(key) : 0;
    int32_t partition = kafka_partition(inst, m, why, why_size);
    if (partition == -2 || !m->destination || kafka_topic_illegal(m->destination, why, why_size))
        return RD_KAFKA_RESP_ERR__INVALID_ARG;
    obx_ce_event ce = {.body = m->payload, .body_len = m->payload_len};
    /* a tombstone's value stays null: its attributes go as headers */
    obx_ce_config shape = inst->ce;
    if (!m->payload && shape.mode == OBX_CE_STRUCTURED)
        shape.mode = OBX_CE_BINARY;
    int ce_rc = shape.mode != OBX_CE_OFF
                    ? obx_ce_fill(&ce, &shape, inst->host, m, OBX_CE_KAFKA, why, why_size)
                    : 0;
    if (ce_rc != 0) /* a template too long: never; out of memory: refused for now */
        return ce_rc == -1 ? RD_KAFKA_RESP_ERR__INVALID_ARG : RD_KAFKA_RESP_ERR__QUEUE_FULL;
    rd_kafka_headers_t *hdrs = kafka_headers(inst, m, &ce);
    rd_kafka_resp_err_t err =
        kafka_produce_value(inst, m, &ce, hdrs, key, key_len, partition, why, why_size);
    obx_ce_event_free(&ce); /* librdkafka copied the value (RD_KAFKA_MSG_F_COPY) */
    return err;
}

/* kafka_produce_one with the value and headers built; owns hdrs. */
static rd_kafka_resp_err_t kafka_produce_value(obx_instance *inst, const obx_message *m,
                                               const obx_ce_event *ce, rd_kafka_headers_t *hdrs,
                                               const char *key, size_t key_len, int32_t partition,
                                               char *why, size_t why_size)
{
    uint64_t aggregate = obx_aggregate_hash(m), event = kafka_hash(m->event_id);
    int alone = kafka_suspect(inst, event) || kafka_alone_busy(inst, aggregate);
    rd_kafka_t *rk = inst->rk;
    size_t size = kafka_wire_size(key_len, ce->body_len, hdrs);
    if (inst->max_msg_size > 0 && size > (size_t)inst->max_msg_size) {
        snprintf(why, why_size,
                 "message too large: %zu bytes (payload %zu, key %zu, headers %zu) is over "
                 "message.max.bytes %lld",
                 size, ce->body_len, key_len,
                 size - ce->body_len - key_len - KAFKA_RECORD_MAX_OVERHEAD,
                 (long long)inst->max_msg_size);
        rd_kafka_headers_destroy(hdrs);
        return RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
    }
    if (alone && !(rk = kafka_alone_rk(inst, why, why_size))) {
        rd_kafka_headers_destroy(hdrs);
        return RD_KAFKA_RESP_ERR__QUEUE_FULL; /* refused for now */
    }
    kafka_msg *km = malloc(sizeof *km);
    if (!km || (alone && kafka_alone_take(inst, aggregate) < 0)) {
        free(km);
        rd_kafka_headers_destroy(hdrs);
        return RD_KAFKA_RESP_ERR__QUEUE_FULL; /* refused for now, like a full queue */
    }
    *km = (kafka_msg){m->token, inst->published + 1, aggregate, event, size, alone};
    /* the alone producer produces by name: it is used rarely */
    rd_kafka_topic_t *topic = alone ? NULL : kafka_topic(inst, m->destination);
    rd_kafka_vu_t vu[8];
    memset(vu, 0, sizeof vu);
    if (topic) {
        vu[0].vtype = RD_KAFKA_VTYPE_RKT;
        vu[0].u.rkt = topic;
    } else {
        vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
        vu[0].u.cstr = m->destination;
    }
    vu[1].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[1].u.i = RD_KAFKA_MSG_F_COPY;
    vu[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[2].u.mem.ptr = (void *)ce->body;
    vu[2].u.mem.size = ce->body_len;
    vu[3].vtype = RD_KAFKA_VTYPE_KEY;
    vu[3].u.mem.ptr = (void *)key;
    vu[3].u.mem.size = key_len;
    vu[4].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[4].u.headers = hdrs;
    vu[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vu[5].u.ptr = km;
    size_t nvu = 6;
    if (partition != RD_KAFKA_PARTITION_UA) {
        vu[nvu].vtype = RD_KAFKA_VTYPE_PARTITION;
        vu[nvu++].u.i32 = partition;
    }
    if (inst->created_at_timestamp && m->created_at_us > 0) { /* else librdkafka's: now */
        vu[nvu].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
        vu[nvu++].u.i64 = m->created_at_us / 1000;
    }
    rd_kafka_error_t *error = rd_kafka_produceva(rk, vu, nvu);
    if (!error) {
        inst->published++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    rd_kafka_resp_err_t err = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    rd_kafka_headers_destroy(hdrs); /* owned by the message only on success */
    if (alone)
        kafka_alone_release(inst, aggregate);
    free(km);
    if (err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
        snprintf(why, why_size, "topic \"%.200s\" has no partition %d (partition_template)",
                 m->destination, (int)partition);
    else if (err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
             err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        snprintf(why, why_size, "topic \"%.200s\" does not exist in the cluster (%s)",
                 m->destination, rd_kafka_err2str(err));
    return err;
}

#define KAFKA_HELD_MAX 32

/* Was an earlier event of m's aggregate refused in this batch? OBX_OK when
 * not, else what m is refused with. */
static obx_status kafka_held(const obx_message *m, const obx_message *const *held,
                             const obx_status *held_status, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const obx_message *h = held[i];
        if (!strcmp(h->aggregate_id, m->aggregate_id) &&
            !strcmp(h->aggregate_type, m->aggregate_type))
            return kafka_held_status(held_status[i]);
    }
    return OBX_OK;
}

/* Refuses a message with its reason. A host without refuse (ABI 1.0) learns
 * a reason only from a completion: there the message is accepted and
 * completed at once, except for what the 1.0 contract refuses silently. */
static void kafka_refuse(obx_instance *inst, const obx_message *m, obx_status *accept,
                         obx_status status, int code, const char *why, int complete_if_old)
{
    const obx_host *host = inst->host;
    if (OBX_HOST_HAS(host, refuse)) {
        *accept = status;
        host->refuse(host->host_ctx, m->token, code, why);
    } else if (complete_if_old && status != OBX_FATAL) {
        *accept = OBX_OK;
        inst->in_flight++;
        kafka_complete(inst, m->token, status, code, why);
    } else {
        *accept = status;
    }
}

static int kafka_fatal(const obx_instance *inst)
{
    return rd_kafka_fatal_error(inst->rk, NULL, 0) ||
           (inst->rk_alone && rd_kafka_fatal_error(inst->rk_alone, NULL, 0));
}

obx_status kafka_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                               obx_status *accept)
{
    obx_status result = OBX_OK;
    obx_status refuse = OBX_OK; /* once set, the rest of the batch is refused with it */
    char why[400] = "";
    const obx_message *held[KAFKA_HELD_MAX];
    obx_status held_status[KAFKA_HELD_MAX];
    size_t nheld = 0;

    if (count && inst->topic_count >= KAFKA_TOPICS_MAX)
        kafka_recycle(inst);
    if (inst->closed || kafka_fatal(inst)) {
        refuse = result = OBX_FATAL;
        snprintf(why, sizeof why, inst->closed ? "closed" : "fatal producer error");
    } else if (count && atomic_load(&inst->down) && OBX_HOST_HAS(inst->host, refuse) &&
               kafka_probe(inst, KAFKA_PUBLISH_CHECK_MS) != OBX_OK) {
        refuse = OBX_UNAVAILABLE;
        snprintf(why, sizeof why, "all brokers are down: %s", inst->down_reason);
    }
    for (size_t i = 0; i < count; i++) {
        const obx_message *m = &msgs[i];
        rd_kafka_resp_err_t err;
        obx_status status;

        if (refuse != OBX_OK) {
            kafka_refuse(inst, m, &accept[i], refuse, 0, why, 0);
            continue;
        }
        /* a later event must not overtake its aggregate's failed one */
        if ((status = kafka_held(m, held, held_status, nheld)) != OBX_OK) {
            kafka_refuse(inst, m, &accept[i], status, 0, KAFKA_HELD_DETAIL, 0);
            continue;
        }
        err = kafka_produce_one(inst, m, why, sizeof why);
        if (!err) {
            accept[i] = OBX_OK;
            inst->in_flight++;
            continue;
        }
        status = kafka_classify(inst, err);
        if (!*why)
            snprintf(why, sizeof why, "%s", rd_kafka_err2str(err));
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL || status == OBX_FATAL) {
            /* the whole producer is affected: refuse this one and all later ones;
             * a full queue is pushback, the output's state */
            refuse = status;
            if (status == OBX_FATAL)
                result = OBX_FATAL;
            kafka_refuse(inst, m, &accept[i], refuse, (int)err, why, 0);
            continue;
        }
        /* rejected outright (too large, bad topic name, ...): refused with its reason */
        kafka_refuse(inst, m, &accept[i], status, (int)err, why, 1);
        if (nheld == KAFKA_HELD_MAX) {
            refuse = OBX_RETRIABLE;
            snprintf(why, sizeof why, "%s", KAFKA_HELD_DETAIL);
        } else {
            held_status[nheld] = status;
            held[nheld++] = m;
        }
    }
    /* serve delivery reports that are already due without waiting */
    if (!inst->closed && count) {
        rd_kafka_poll(inst->rk, 0);
        if (inst->rk_alone)
            rd_kafka_poll(inst->rk_alone, 0);
    }
    return result;
}
