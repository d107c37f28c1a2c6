/*
 * Producing and completing: publish_batch hands messages to librdkafka with
 * the host's token as the message opaque; the delivery report is the only
 * place a message completes (besides an immediate refusal of a message
 * librdkafka rejects outright, completed inside publish_batch with its text).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_int.h"

/* The token travels as the message opaque pointer. */
_Static_assert(sizeof(void *) >= sizeof(uint64_t), "the kafka driver needs 64-bit pointers");

static void *kafka_token_to_opaque(uint64_t token)
{
    return (void *)(uintptr_t)token;
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
    inst->host->complete(inst->host->host_ctx, token, status, code, detail);
}

void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque)
{
    obx_instance *inst = opaque;
    uint64_t token = (uint64_t)(uintptr_t)rkmessage->_private;
    rd_kafka_resp_err_t err = rkmessage->err;
    obx_status status = kafka_classify(inst, err);
    char detail[512];

    if (status == OBX_OK) {
        /* acks=all makes this PERSISTED; anything less is not an acknowledgement */
        if (rd_kafka_message_status(rkmessage) == RD_KAFKA_MSG_STATUS_PERSISTED) {
            kafka_complete(inst, token, OBX_OK, 0, NULL);
            return;
        }
        kafka_complete(inst, token, OBX_RETRIABLE, 0, "delivery not persisted");
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        snprintf(detail, sizeof detail, "aborted: %s", rd_kafka_err2str(err));
    } else if (status == OBX_FATAL) {
        char why[256];
        rd_kafka_fatal_error(rk, why, sizeof why);
        snprintf(detail, sizeof detail, "%s: %s", rd_kafka_err2str(err), why);
    } else {
        snprintf(detail, sizeof detail, "%s", rd_kafka_err2str(err));
    }
    kafka_complete(inst, token, status, (int)err, detail);
}

/* created_at as ISO-8601 UTC with microseconds, e.g. 2024-05-01T12:34:56.123456Z */
static void kafka_format_time(int64_t us, char *buf, size_t size)
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    struct tm tm;
    time_t t;
    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    t = (time_t)secs;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%06lldZ", (long long)frac);
}

static void kafka_add_header(rd_kafka_headers_t *hdrs, const char *key, const char *value)
{
    rd_kafka_header_add(hdrs, key, -1, value, value ? -1 : 0);
}

static rd_kafka_headers_t *kafka_headers(const obx_message *m)
{
    char created[48];
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(5 + m->header_count);
    kafka_format_time(m->created_at_us, created, sizeof created);
    kafka_add_header(hdrs, "event_id", m->event_id);
    kafka_add_header(hdrs, "event_type", m->event_type);
    kafka_add_header(hdrs, "aggregate_type", m->aggregate_type);
    kafka_add_header(hdrs, "aggregate_id", m->aggregate_id);
    kafka_add_header(hdrs, "created_at", created);
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
    vu[5].u.ptr = kafka_token_to_opaque(m->token);
    rd_kafka_error_t *error = rd_kafka_produceva(inst->rk, vu, 6);
    if (!error)
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_resp_err_t err = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    rd_kafka_headers_destroy(vu[4].u.headers); /* owned by the message only on success */
    return err;
}

#define KAFKA_HELD_MAX 32

/* Was an earlier event of m's aggregate refused or failed in this batch? */
static int kafka_held(const obx_message *m, const obx_message *const *held, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const obx_message *h = held[i];
        if (h->aggregate_id && m->aggregate_id && !strcmp(h->aggregate_id, m->aggregate_id) &&
            (h->aggregate_type == m->aggregate_type ||
             (h->aggregate_type && m->aggregate_type &&
              !strcmp(h->aggregate_type, m->aggregate_type))))
            return 1;
    }
    return 0;
}

obx_status kafka_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                               obx_status *accept)
{
    obx_status result = OBX_OK;
    obx_status refuse = OBX_OK; /* once set, the rest of the batch is refused with it */
    const obx_message *held[KAFKA_HELD_MAX];
    size_t nheld = 0;

    if (inst->closed || rd_kafka_fatal_error(inst->rk, NULL, 0))
        refuse = result = OBX_FATAL;
    for (size_t i = 0; i < count; i++) {
        const obx_message *m = &msgs[i];
        rd_kafka_resp_err_t err;
        obx_status status;

        if (refuse != OBX_OK) {
            accept[i] = refuse;
            continue;
        }
        /* a later event must not overtake its aggregate's failed one */
        if (kafka_held(m, held, nheld)) {
            accept[i] = OBX_RETRIABLE;
            continue;
        }
        err = kafka_produce_one(inst, m);
        if (!err) {
            accept[i] = OBX_OK;
            inst->in_flight++;
            continue;
        }
        status = kafka_classify(inst, err);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL || status == OBX_FATAL) {
            /* the whole producer is affected: refuse this one and all later ones */
            refuse = accept[i] = status == OBX_FATAL ? OBX_FATAL : OBX_RETRIABLE;
            if (status == OBX_FATAL)
                result = OBX_FATAL;
            continue;
        }
        /*
         * Rejected outright (too large, bad topic name, ...): accept and
         * complete at once, so the host records librdkafka's reason.
         */
        accept[i] = OBX_OK;
        inst->in_flight++;
        kafka_complete(inst, m->token, status, (int)err, rd_kafka_err2str(err));
        if (status == OBX_RETRIABLE) {
            if (nheld == KAFKA_HELD_MAX)
                refuse = OBX_RETRIABLE;
            else
                held[nheld++] = m;
        }
    }
    /* serve delivery reports that are already due without waiting */
    if (!inst->closed && count)
        rd_kafka_poll(inst->rk, 0);
    return result;
}
