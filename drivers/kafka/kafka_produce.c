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
 * acknowledged ahead of a failed one. While every broker is down the batch
 * is refused UNAVAILABLE, and timeouts then complete UNAVAILABLE.
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
} kafka_msg;

#define KAFKA_HELD_DETAIL "not sent in order: an earlier event of its aggregate failed"
#define KAFKA_PUBLISH_CHECK_MS 200 /* while down: does a broker answer again? */

/* Remember that km's aggregate failed: its messages published so far must not succeed. */
static void kafka_remember_failure(obx_instance *inst, const kafka_msg *km)
{
    size_t n = sizeof inst->failed / sizeof *inst->failed;
    inst->failed[inst->failed_next] = (struct kafka_failed){km->aggregate, inst->published};
    inst->failed_next = (inst->failed_next + 1) % n;
    if (inst->failed_count < n)
        inst->failed_count++;
}

/* Was an earlier message of km's aggregate failed while km was in flight? */
static int kafka_after_failure(const obx_instance *inst, const kafka_msg *km)
{
    for (size_t i = 0; i < inst->failed_count; i++)
        if (inst->failed[i].aggregate == km->aggregate && km->number <= inst->failed[i].upto)
            return 1;
    return 0;
}

obx_status kafka_classify(const obx_instance *inst, rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR: return OBX_OK;
    /* the message itself can never be accepted */
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
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

void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque)
{
    obx_instance *inst = opaque;
    kafka_msg km = *(kafka_msg *)rkmessage->_private;
    rd_kafka_resp_err_t err = rkmessage->err;
    obx_status status = kafka_classify(inst, err);
    char detail[512];

    free(rkmessage->_private);
    if (status == OBX_OK) {
        /* acks=all makes this PERSISTED; anything less is not an acknowledgement */
        if (rd_kafka_message_status(rkmessage) != RD_KAFKA_MSG_STATUS_PERSISTED) {
            kafka_complete(inst, km.token, OBX_RETRIABLE, 0, "delivery not persisted");
        } else if (kafka_after_failure(inst, &km)) {
            kafka_complete(inst, km.token, OBX_RETRIABLE, 0, KAFKA_HELD_DETAIL);
        } else {
            kafka_mark_back(inst, "a delivery was acknowledged");
            kafka_complete(inst, km.token, OBX_OK, 0, NULL);
        }
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        snprintf(detail, sizeof detail, "aborted: %s", rd_kafka_err2str(err));
    } else if (status == OBX_FATAL) {
        char why[256];
        rd_kafka_fatal_error(rk, why, sizeof why);
        snprintf(detail, sizeof detail, "%s: %s", rd_kafka_err2str(err), why);
    } else if ((err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT || err == RD_KAFKA_RESP_ERR__TRANSPORT) &&
               atomic_load(&inst->down)) {
        /* not this message's fault: the cluster was unreachable */
        status = kafka_unavailable(inst);
        snprintf(detail, sizeof detail, "%s (all brokers down: %s)", rd_kafka_err2str(err),
                 inst->down_reason);
    } else {
        snprintf(detail, sizeof detail, "%s", rd_kafka_err2str(err));
    }
    if (!kafka_after_failure(inst, &km)) /* already covered by an earlier failure */
        kafka_remember_failure(inst, &km);
    kafka_complete(inst, km.token, status, (int)err, detail);
}

static void kafka_add_header(rd_kafka_headers_t *hdrs, const char *key, const char *value)
{
    rd_kafka_header_add(hdrs, key, -1, value, value ? -1 : 0);
}

static rd_kafka_headers_t *kafka_headers(const obx_message *m)
{
    obx_envelope env;
    obx_envelope_fill(&env, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(env.count + 1 + m->header_count);
    for (size_t i = 0; i < env.count; i++) /* rd_kafka_header_add copies */
        kafka_add_header(hdrs, env.field[i].name, env.field[i].value);
    if (m->content_type)
        kafka_add_header(hdrs, "content_type", m->content_type);
    for (size_t i = 0; i < m->header_count; i++)
        if (m->headers[i].key)
            kafka_add_header(hdrs, m->headers[i].key, m->headers[i].value);
    return hdrs;
}

static const char *kafka_key(const obx_instance *inst, const obx_message *m)
{
    switch (inst->key_mode) {
    case KAFKA_KEY_AGGREGATE_ID: return m->aggregate_id;
    case KAFKA_KEY_EVENT_ID: return m->event_id;
    default: return NULL;
    }
}

#define KAFKA_TOPICS_MAX 4096 /* beyond that, produce by name */

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

static rd_kafka_resp_err_t kafka_produce_one(obx_instance *inst, const obx_message *m)
{
    if (!m->destination || !*m->destination)
        return RD_KAFKA_RESP_ERR__INVALID_ARG;
    kafka_msg *km = malloc(sizeof *km);
    if (!km)
        return RD_KAFKA_RESP_ERR__QUEUE_FULL; /* refused for now, like a full queue */
    *km = (kafka_msg){m->token, inst->published + 1, obx_aggregate_hash(m)};
    const char *key = kafka_key(inst, m);
    rd_kafka_topic_t *topic = kafka_topic(inst, m->destination);
    rd_kafka_vu_t vu[6];
    memset(vu, 0, sizeof vu);
    if (topic) {
        vu[0].vtype = RD_KAFKA_VTYPE_RKT;
        vu[0].u.rkt = topic;
    } else { /* librdkafka then says what is wrong with the name */
        vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
        vu[0].u.cstr = m->destination;
    }
    vu[1].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[1].u.i = RD_KAFKA_MSG_F_COPY;
    vu[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[2].u.mem.ptr = (void *)m->payload;
    vu[2].u.mem.size = m->payload_len;
    vu[3].vtype = RD_KAFKA_VTYPE_KEY;
    vu[3].u.mem.ptr = (void *)key;
    vu[3].u.mem.size = key ? strlen(key) : 0;
    vu[4].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[4].u.headers = kafka_headers(m);
    vu[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vu[5].u.ptr = km;
    rd_kafka_error_t *error = rd_kafka_produceva(inst->rk, vu, 6);
    if (!error) {
        inst->published++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    rd_kafka_resp_err_t err = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    rd_kafka_headers_destroy(vu[4].u.headers); /* owned by the message only on success */
    free(km);
    return err;
}

#define KAFKA_HELD_MAX 32

/* Was an earlier event of m's aggregate refused or failed in this batch? */
static int kafka_held(const obx_message *m, const obx_message *const *held, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const obx_message *h = held[i];
        if (!strcmp(h->aggregate_id, m->aggregate_id) &&
            !strcmp(h->aggregate_type, m->aggregate_type))
            return 1;
    }
    return 0;
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

obx_status kafka_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                               obx_status *accept)
{
    obx_status result = OBX_OK;
    obx_status refuse = OBX_OK; /* once set, the rest of the batch is refused with it */
    char why[400] = "";
    const obx_message *held[KAFKA_HELD_MAX];
    size_t nheld = 0;

    if (inst->closed || rd_kafka_fatal_error(inst->rk, NULL, 0)) {
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
        if (kafka_held(m, held, nheld)) {
            kafka_refuse(inst, m, &accept[i], OBX_RETRIABLE, 0, KAFKA_HELD_DETAIL, 0);
            continue;
        }
        err = kafka_produce_one(inst, m);
        if (!err) {
            accept[i] = OBX_OK;
            inst->in_flight++;
            continue;
        }
        status = kafka_classify(inst, err);
        snprintf(why, sizeof why, "%s", rd_kafka_err2str(err));
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL || status == OBX_FATAL) {
            /* the whole producer is affected: refuse this one and all later ones */
            refuse = status == OBX_FATAL ? OBX_FATAL : OBX_RETRIABLE;
            if (status == OBX_FATAL)
                result = OBX_FATAL;
            kafka_refuse(inst, m, &accept[i], refuse, (int)err, why, 0);
            continue;
        }
        /* rejected outright (too large, bad topic name, ...): refused with librdkafka's reason */
        kafka_refuse(inst, m, &accept[i], status, (int)err, why, 1);
        if (nheld == KAFKA_HELD_MAX) {
            refuse = OBX_RETRIABLE;
            snprintf(why, sizeof why, "%s", KAFKA_HELD_DETAIL);
        } else {
            held[nheld++] = m;
        }
    }
    /* serve delivery reports that are already due without waiting */
    if (!inst->closed && count)
        rd_kafka_poll(inst->rk, 0);
    return result;
}
